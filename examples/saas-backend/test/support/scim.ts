import { ScimError } from '../../src/scim/errors.js';

/** The ScimError `run` throws; fails the test when it throws none, or anything else (a TypeError, a RangeError). */
export function scimErrorOf(run: () => unknown): ScimError {
  try {
    run();
  } catch (error) {
    if (error instanceof ScimError) return error;
    throw new Error(`expected a ScimError, got ${String(error)}`);
  }
  throw new Error('expected a ScimError, got none');
}

export const scimJson = 'application/scim+json';

export interface ScimAnswer {
  status: number;
  headers: Headers;
  body: any;
}

/** A SCIM client of one directory: bearer token, SCIM's media type. */
export function scimClient(baseUrl: string, token: string) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ScimAnswer> => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, accept: scimJson, ...(body === undefined ? {} : { 'content-type': scimJson }), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };
}
