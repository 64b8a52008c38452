'use client';

import { useEffect, useState } from 'react';
import { api, operatorApi } from '@/lib/api';
import { forgetImpersonation, heldImpersonation, type HeldImpersonation } from '@/lib/impersonation';
import { clockFormat } from './formats';

/** Back to the operator: the tab forgets the user's token and opens the user's page as the operator. */
function returnToOperator(held: HeldImpersonation) {
  forgetImpersonation();
  window.location.assign(`/operator/users/${held.userId}`);
}

/**
 * On every page while an operator is signed in as a user in this tab: who, until when, and End.
 * It ends by itself at its bound, and when the backend no longer knows the session (another
 * operator ended it, the user was banned): the tab then acts as the operator again.
 */
export function ImpersonationBanner() {
  const [held, setHeld] = useState<HeldImpersonation>();
  const [ending, setEnding] = useState(false);

  useEffect(() => {
    const current = heldImpersonation();
    setHeld(current);
    if (!current) return;
    api.auth.getSession().then(
      (session) => {
        if (!session?.impersonatedBy) returnToOperator(current);
      },
      () => {
        // Unreachable backend: the pages say so; the banner stays while the token may still work.
      },
    );
    const timer = setTimeout(() => returnToOperator(current), Date.parse(current.expiresAt) - Date.now());
    return () => clearTimeout(timer);
  }, []);

  if (!held) return null;
  return (
    <div role="region" aria-label="Signed in as a user" className="flex flex-wrap items-center gap-x-4 gap-y-2 border-b border-amber-300 bg-amber-50 px-4 py-2 text-sm text-amber-950 sm:px-6">
      <p className="grow">
        You are signed in as <strong>{held.name || held.email}</strong> ({held.email}) as an operator until {clockFormat.format(new Date(held.expiresAt))}.
      </p>
      <button
        type="button"
        disabled={ending}
        onClick={async () => {
          setEnding(true);
          // Ended with the operator's own session; a session already gone ends nothing, and the tab goes back all the same.
          await operatorApi.endImpersonation(held.sessionId).catch(() => undefined);
          returnToOperator(held);
        }}
      >
        {ending ? 'Ending…' : 'End'}
      </button>
    </div>
  );
}
