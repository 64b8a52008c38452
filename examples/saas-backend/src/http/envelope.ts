import type { Response } from 'express';

/**
 * The response envelope of every route: `{ success: true, data, meta? }` for results and
 * `{ success: false, error: { code, message, details? } }` for errors.
 */

export function sendData(res: Response, data: unknown, status = 200): void {
  res.status(status).json({ success: true, data });
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
  res.status(status).type('json').send(`{"success":true,"data":${json}}`);
}

export function sendJsonList(res: Response, page: { json: string; meta: { page: number; limit: number; total: number; totalPages: number } }): void {
  res.status(200).type('json').send(`{"success":true,"data":${page.json},"meta":${JSON.stringify(page.meta)}}`);
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
