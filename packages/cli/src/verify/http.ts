/** A small JSON client for probing a backend: never throws for an HTTP status, only for no answer. */

export interface Probe {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  token?: string;
  organizationId?: string;
  /** A `cookie` header: a session a browser would send (verify --frontend's Better Auth cookie). */
  cookie?: string;
  /**
   * Sign-up, sign-in and the docs page: sent with the service key (when known), which the backend
   * does not count against the users' rate limits, so verify can run all day. The key changes
   * nothing else about these routes.
   */
  trusted?: boolean;
}

/** The backend answered 429: the check could not run, which says nothing about the setup. */
export class RateLimitedError extends Error {
  override name = 'RateLimitedError';
  constructor(readonly retryAfterSeconds: number | undefined) {
    super(`rate limited by the backend (429)${retryAfterSeconds === undefined ? '' : `, retry after ${retryAfterSeconds} s`}`);
  }
}

export function httpClient(baseUrl: string, options: { timeoutMs?: number; serviceKey?: string } = {}) {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const { serviceKey } = options;
  return async function request(method: string, pathname: string, options: RequestOptions = {}): Promise<Probe> {
    const headers: Record<string, string> = {};
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const bearer = options.token ?? (options.trusted ? serviceKey : undefined);
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (options.organizationId) headers['x-organization-id'] = options.organizationId;
    if (options.cookie) headers.cookie = options.cookie;
    const response = await fetch(new URL(pathname, baseUrl), {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    if (response.status === 429) {
      const retryAfter = Number(response.headers.get('retry-after'));
      throw new RateLimitedError(Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined);
    }
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: response.status, headers: response.headers, body, text };
  };
}

export type HttpClient = ReturnType<typeof httpClient>;
