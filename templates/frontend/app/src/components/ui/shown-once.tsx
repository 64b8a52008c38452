'use client';

import type { ReactNode } from 'react';
import { CopyButton } from './copy-button';

/** A value to paste elsewhere: its name, the value whole (it wraps, never cut), and a copy button. */
export interface ShownValue {
  /** What it is, read out as the value's name: "The secret". */
  label: string;
  value: string;
  copyLabel: string;
}

/**
 * A secret in the one answer that holds it (a key, a webhook secret, a directory's token): what
 * happened, the values with copy buttons, and Done, which forgets them. The backend keeps only a
 * hash, so `message` says to copy it now.
 */
export function ShownOnce({ region, message, values, onDone }: { region: string; message: ReactNode; values: ShownValue[]; onDone(): void }) {
  return (
    <div className="grid gap-3" role="region" aria-label={region}>
      {message}
      {values.map(({ label, value, copyLabel }) => (
        <div key={label} className="grid gap-1">
          <span className="text-sm text-gray-600">{label}</span>
          <code className="block overflow-x-auto rounded-md border border-gray-300 bg-white p-3 text-sm break-all" aria-label={label}>
            {value}
          </code>
          <div>
            <CopyButton text={value} label={copyLabel} />
          </div>
        </div>
      ))}
      <div>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}
