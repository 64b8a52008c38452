/**
 * CSV as RFC 4180 has it, safe to open in a spreadsheet: a field with a comma, a quote or a line
 * break is quoted (its quotes doubled), and a field that a spreadsheet would take for a formula
 * (starting with =, +, -, @, a tab or a carriage return) gets a leading apostrophe, as OWASP's
 * "CSV injection" advice says: an audit log holds text other people typed (names, user agents).
 */

const formulaStart = /^[=+\-@\t\r]/;
const needsQuotes = /[",\r\n]/;

/** One field: null and undefined are empty, a Date its ISO time, an object its JSON. */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = value instanceof Date ? value.toISOString() : typeof value === 'object' ? JSON.stringify(value) : String(value);
  const formula = formulaStart.test(text);
  if (formula) text = `'${text}`;
  return formula || needsQuotes.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One line, with the CRLF that RFC 4180 ends every line with. */
export const csvLine = (values: readonly unknown[]): string => `${values.map(csvField).join(',')}\r\n`;
