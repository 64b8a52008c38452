'use client';

import { useState } from 'react';
import { AuthstrapError } from '@/lib/authstrap-client';

/** What an action ended with: a sentence to show, and for a refused input the backend's word on each field. */
export interface Outcome {
  kind: 'success' | 'error';
  message: string;
  details?: Record<string, string>;
}

/** The error envelope in words: the backend's message and field details, or the thrown error's message. */
export function failureOf(thrown: unknown): Outcome {
  if (thrown instanceof AuthstrapError) return { kind: 'error', message: thrown.message, ...(thrown.details ? { details: thrown.details } : {}) };
  return { kind: 'error', message: thrown instanceof Error ? thrown.message : 'Something went wrong; try again.' };
}

/**
 * One action of a page (a button, a form): `run` shows it pending, then the sentence `work`
 * returns, or what the backend answered instead. Only one runs at a time.
 */
export function useAction<Args extends unknown[]>(work: (...args: Args) => Promise<string | void>) {
  const [pending, setPending] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>();
  async function run(...args: Args): Promise<boolean> {
    setPending(true);
    setOutcome(undefined);
    try {
      const message = await work(...args);
      setOutcome(message ? { kind: 'success', message } : undefined);
      return true;
    } catch (thrown) {
      setOutcome(failureOf(thrown));
      return false;
    } finally {
      setPending(false);
    }
  }
  return { run, pending, outcome, clear: () => setOutcome(undefined) };
}

/** An outcome as screen readers hear it: a status for a success, an alert with the field details for a failure. */
export function OutcomeMessage({ outcome, pending, pendingText = 'Working…' }: { outcome?: Outcome; pending?: boolean; pendingText?: string }) {
  if (pending) return <p className="muted" role="status">{pendingText}</p>;
  if (!outcome) return null;
  if (outcome.kind === 'success') return <p className="success" role="status">{outcome.message}</p>;
  return (
    <div className="error" role="alert">
      <p>{outcome.message}</p>
      {outcome.details && (
        <ul className="list-disc pl-5">
          {Object.entries(outcome.details).map(([field, problem]) => (
            <li key={field}>
              {field}: {problem}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
