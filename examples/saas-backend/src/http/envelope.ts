import type { Response } from 'express';

/**
 * The response envelope of every route: `{ success: true, data, meta? }` for results and
 * `{ success: false, error: { code, message, details? } }` for errors.
 */

export function sendData(res: Response, data: unknown, status = 200): void {
  sendJsonText(res, status, JSON.stringify({ success: true, data }));
}

export function sendList(
  res: Response,
  page: { rows: unknown[]; meta: { page: number; limit: number; total: number; totalPages: number } },
): void {
  res.status(200).json({ success: true, data: page.rows, meta: page.meta });
}

/**
 * sendData and sendList for JSON that PostgreSQL wrote (repositories' findJsonById and listJson):
 * the same envelope, with the data placed in it as it came.
 */
export function sendJsonData(res: Response, json: string, status = 200): void {
  sendJsonText(res, status, `{"success":true,"data":${json}}`);
}

/**
 * What sendJsonData sends, byte for byte, written in SQL around `json` (an expression of the row's
 * JSON text): the answer a keyed write keeps with its key in its own statement (idempotency/keys.ts).
 */
export const jsonDataSql = (json: string) => `'{"success":true,"data":' || ${json} || '}'`;

export function sendJsonList(res: Response, page: { json: string; meta: { page: number; limit: number; total: number; totalPages: number } }): void {
  sendJsonText(res, 200, `{"success":true,"data":${page.json},"meta":${JSON.stringify(page.meta)}}`);
}

/**
 * What `res.status(status).json(...)` sends for a body already written as JSON, byte for byte
 * (status, Content-Type, Content-Length, body; no body for HEAD), without the general work of
 * Express's res.send: looking the type up, parsing it again for its charset, copying a body of
 * 1000 characters or more into a Buffer, asking whether the request is fresh (bench/README.md,
 * issue 32). A conditional request (If-None-Match, If-Modified-Since) still goes through
 * res.send, whose freshness check it is. Only for the envelope's statuses: 2xx with a body.
 */
function sendJsonText(res: Response, status: number, body: string): void {
  const { req } = res;
  if (req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined) {
    res.status(status).type('json').send(body);
    return;
  }
  // Encoded once: its length is the Content-Length, and the socket gets the bytes as they are
  // (a string would be measured and encoded again on its way out).
  const bytes = Buffer.from(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  if (res.getHeader('Transfer-Encoding') === undefined) res.setHeader('Content-Length', String(bytes.length));
  if (req.method === 'HEAD') res.end();
  else res.end(bytes);
}

export function sendError(
  res: Response,
  status: number,
  code: string,
  message: string,
  details?: Record<string, string>,
): void {
  res.status(status).json({ success: false, error: details ? { code, message, details } : { code, message } });
}
