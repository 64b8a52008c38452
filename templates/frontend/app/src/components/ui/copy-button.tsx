'use client';

import { useState } from 'react';

/** Copies `text` to the clipboard and says so (or says to copy it by hand where the clipboard is refused). */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <span className="inline-flex items-center gap-2">
      <button
        type="button"
        className="quiet"
        onClick={() =>
          navigator.clipboard.writeText(text).then(
            () => setState('copied'),
            () => setState('failed'),
          )
        }
      >
        {label}
      </button>
      <span role="status" className="muted">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Select the text and copy it by hand' : ''}
      </span>
    </span>
  );
}
