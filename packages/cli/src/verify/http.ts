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
}

export function httpClient(baseUrl: string, timeoutMs = 10_000) {
  return async function request(method: string, pathname: string, options: RequestOptions = {}): Promise<Probe> {
    const headers: Record<string, string> = {};
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.organizationId) headers['x-organization-id'] = options.organizationId;
    const response = await fetch(new URL(pathname, baseUrl), {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
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
