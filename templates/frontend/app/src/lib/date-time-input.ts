/**
 * A stored time (ISO 8601, UTC) as a `datetime-local` input shows it: the reader's local time to
 * the minute, `2026-12-05T19:30`; empty when there is none.
 */
export function dateTimeInputValue(stored: string | null | undefined): string {
  if (!stored) return '';
  const time = new Date(stored);
  const local = new Date(time.getTime() - time.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}
