'use client';

import { useRouter } from 'next/navigation';
import { operatorApi } from '@/lib/api';
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
        await authClient.signOut();
        router.push('/sign-in');
        router.refresh();
      }}
    >
      Sign out
    </button>
  );
}
