import { once } from 'node:events';
import type { Response } from 'express';

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

/** Where a batch of an export ended: its last row's time (as PostgreSQL's text, to the microsecond) and id. */
export interface CsvCursor {
  at: string;
  id: string;
}

/** A row of an export: its cells by column (the columns name them), and where it stands in the keyset order. */
export interface CsvRow {
  id: string;
  cursorAt: string;
}

/**
 * Writes the header and every batch as CSV, waiting for the client to take each before reading
 * the next: the backend holds one batch at a time, however long the log. `next(after)` reads the
 * batch after the cursor (keyset paging, newest first); one shorter than `batch` is the last.
 */
export async function streamCsv<Row extends CsvRow>(
  res: Response,
  { filename, columns, batch, next }: { filename: string; columns: readonly NoInfer<keyof Row & string>[]; batch: number; next: (after: CsvCursor | undefined) => Promise<Row[]> },
): Promise<void> {
  // The first batch is read before anything is sent, so that an error still gets the JSON envelope.
  let rows = await next(undefined);
  res.status(200);
  res.setHeader('content-type', 'text/csv; charset=utf-8');
  res.setHeader('content-disposition', `attachment; filename="${filename}"`);
  res.setHeader('cache-control', 'no-store');
  res.write(csvLine(columns));
  try {
    while (rows.length > 0) {
      const text = rows.map((row) => csvLine(columns.map((column) => row[column]))).join('');
      // A client that went away ends the export (no 'drain' comes then, only 'close').
      if (!res.write(text)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
      if (res.destroyed || rows.length < batch) break;
      const last = rows[rows.length - 1]!;
      rows = await next({ at: last.cursorAt, id: last.id });
    }
  } catch (error) {
    // Past the headers no error envelope can follow: the connection is cut, so that the client
    // sees a broken download rather than a file that looks complete. The error is still logged.
    res.destroy();
    throw error;
  }
  res.end();
}
