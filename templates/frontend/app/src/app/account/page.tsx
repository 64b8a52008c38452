import { redirect } from 'next/navigation';
import { AccountPanel } from '@/components/account-panel';
import { currentSession } from '@/lib/session';

/** The signed-in user's account: their sessions, their password, deleting it. */
export default async function AccountPage() {
  const session = await currentSession();
  if (!session) redirect('/sign-in');
  return <AccountPanel email={session.user.email} />;
}
