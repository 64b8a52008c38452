import { headers } from 'next/headers';
import { redirect } from 'next/navigation';
import { AccountPanel } from '@/components/account-panel';
import { auth } from '@/lib/auth';

/** The signed-in user's account: their sessions, their password, deleting it. */
export default async function AccountPage() {
  const session = await auth.api.getSession({ headers: await headers() });
  if (!session) redirect('/sign-in');
  return <AccountPanel email={session.user.email} />;
}
