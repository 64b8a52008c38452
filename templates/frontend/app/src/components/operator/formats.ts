/** How the operator's pages show times: in the reader's own zone and language. */
export const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
export const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
/** "14:32": when an impersonation ends, in the banner. */
export const clockFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
