'use client';

import { useRouter } from 'next/navigation';
import { api, operatorApi } from '@/lib/api';
import { authClient } from '@/lib/auth-client';
import { forgetImpersonation, heldImpersonation } from '@/lib/impersonation';

export function SignOutButton() {
  const router = useRouter();
  return (
    <button
      className="quiet"
      onClick={async () => {
        // An operator signed in as a user in this tab ends that too: nothing of theirs outlives the sign-out here.
        const held = heldImpersonation();
        if (held) {
          forgetImpersonation();
          await operatorApi.endImpersonation(held.sessionId).catch(() => undefined);
        }
        // A single sign-on's session is the backend's own cookie: the backend ends it. A password
        // sign-in's is Better Auth's: this app's /api/auth ends it. Either may be absent.
        await api.auth.signOut().catch(() => undefined);
        await authClient.signOut().catch(() => undefined);
        router.push('/sign-in');
        router.refresh();
      }}
    >
      Sign out
    </button>
  );
}
