'use client';

import * as AlertDialog from '@radix-ui/react-alert-dialog';
import { useState, type ReactNode } from 'react';

/**
 * A button that asks before it does something that cannot be undone (Radix's alert dialog: focus
 * kept inside, Escape cancels, the title and description read out). With `typeToConfirm`, the
 * confirm button stays disabled until that text is typed.
 */
export function ConfirmButton({
  label,
  accessibleName,
  title,
  description,
  confirmLabel,
  typeToConfirm,
  onConfirm,
  disabled,
  className = 'quiet danger',
}: {
  /** The button's text, e.g. "Remove Ada". */
  label: string;
  /** Its name for a screen reader when the text alone is ambiguous in a list: "Revoke the invitation to ada@example.com". */
  accessibleName?: string;
  title: string;
  description: ReactNode;
  confirmLabel: string;
  typeToConfirm?: string;
  onConfirm(): Promise<unknown> | void;
  disabled?: boolean;
  className?: string;
}) {
  const [typed, setTyped] = useState('');
  const [open, setOpen] = useState(false);
  return (
    <AlertDialog.Root
      open={open}
      onOpenChange={(next) => {
        setOpen(next);
        setTyped('');
      }}
    >
      <AlertDialog.Trigger asChild>
        <button type="button" className={className} disabled={disabled} aria-label={accessibleName}>
          {label}
        </button>
      </AlertDialog.Trigger>
      <AlertDialog.Portal>
        <AlertDialog.Overlay className="fixed inset-0 bg-black/40" />
        <AlertDialog.Content className="fixed top-1/2 left-1/2 grid w-[calc(100%-2rem)] max-w-md -translate-x-1/2 -translate-y-1/2 gap-4 rounded-xl bg-white p-6 shadow-xl">
          <AlertDialog.Title className="text-lg font-semibold">{title}</AlertDialog.Title>
          <AlertDialog.Description asChild>
            <div className="text-sm text-gray-700">{description}</div>
          </AlertDialog.Description>
          {typeToConfirm !== undefined && (
            <label>
              Type {typeToConfirm} to confirm
              <input value={typed} onChange={(event) => setTyped(event.target.value)} autoComplete="off" />
            </label>
          )}
          <div className="flex flex-wrap justify-end gap-2">
            <AlertDialog.Cancel asChild>
              <button type="button" className="quiet">
                Cancel
              </button>
            </AlertDialog.Cancel>
            <button
              type="button"
              className="danger"
              disabled={typeToConfirm !== undefined && typed !== typeToConfirm}
              onClick={async () => {
                setOpen(false);
                await onConfirm();
              }}
            >
              {confirmLabel}
            </button>
          </div>
        </AlertDialog.Content>
      </AlertDialog.Portal>
    </AlertDialog.Root>
  );
}
