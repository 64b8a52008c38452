import Link from 'next/link';
import { redirect } from 'next/navigation';
import { SecurityEvents, Sessions } from '@/components/account-security';
import { currentSession } from '@/lib/session';

/** The signed-in user's own security: where they are signed in, and what happened to their account. */
export default async function SecurityPage() {
  const session = await currentSession();
  if (!session) redirect('/sign-in');
  return (
    <div className="grid gap-6">
      <div>
        <h1>Security</h1>
        <p className="muted">
          {session.user.email} · <Link href="/account">Your account</Link>
        </p>
      </div>
      <Sessions />
      <SecurityEvents />
    </div>
  );
}
