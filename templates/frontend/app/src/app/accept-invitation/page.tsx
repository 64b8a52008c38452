import { AcceptInvitation } from '@/components/account-forms';
import { currentSession } from '@/lib/session';

/** Where an invitation's link ends (the backend mailed it): `?token=...&email=...`. */
export default async function AcceptInvitationPage({ searchParams }: { searchParams: Promise<{ token?: string; email?: string }> }) {
  const { token = '', email = '' } = await searchParams;
  const session = await currentSession();
  return <AcceptInvitation token={token} email={email} signedInAs={session?.user.email} />;
}
