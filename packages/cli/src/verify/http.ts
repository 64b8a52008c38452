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
  async function request(method: string, pathname: string, options: RequestOptions = {}): Promise<Probe> {
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
    return { status: response.status, headers: response.headers, body: jsonOf(text), text };
  }

  /** GET `pathname` as an event stream (the realtime check); a refusal's body is read as the error envelope. */
  async function stream(pathname: string, options: Pick<RequestOptions, 'token' | 'organizationId'> = {}): Promise<StreamProbe> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.organizationId) headers['x-organization-id'] = options.organizationId;
    const controller = new AbortController();
    const answered = setTimeout(() => controller.abort(), timeoutMs);
    const response = await fetch(new URL(pathname, baseUrl), { headers, signal: controller.signal }).finally(() => clearTimeout(answered));
    const close = () => controller.abort();
    if (response.status === 429) {
      close();
      throw new RateLimitedError(undefined);
    }
    if (!response.ok || !response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) {
      const text = await response.text().catch(() => '');
      return { status: response.status, headers: response.headers, body: jsonOf(text), text, next: async () => undefined, close };
    }
    const messages = eventMessages(response.body);
    return {
      status: response.status,
      headers: response.headers,
      body: undefined,
      text: '',
      async next(match, waitMs) {
        const timer = setTimeout(close, waitMs);
        try {
          for await (const message of messages) if (match(message)) return message;
        } catch {
          // Aborted at the deadline, or cut by the backend: nothing matched.
        } finally {
          clearTimeout(timer);
        }
        return undefined;
      },
      close,
    };
  }

  return Object.assign(request, { stream, baseUrl });
}

export type HttpClient = ReturnType<typeof httpClient>;

/** A body as JSON, or undefined when it is empty or not JSON. */
function jsonOf(text: string): any {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** One message of an event stream that carries data. */
export interface StreamMessage {
  event: string;
  data: string;
}

/** An open event stream, or (a status other than 200) its refusal, whose envelope is `body`. */
export interface StreamProbe extends Probe {
  /** The first message `match` accepts within `waitMs`; undefined when none came (the stream is closed then). */
  next(match: (message: StreamMessage) => boolean, waitMs: number): Promise<StreamMessage | undefined>;
  close(): void;
}

/** The messages with data of a text/event-stream body (lines end with CRLF, LF or CR; a blank line ends a message). */
async function* eventMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamMessage> {
  const decoder = new TextDecoder();
  let pending = '';
  let event = '';
  let data: string[] = [];
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    const lines = (pending + decoder.decode(chunk, { stream: true })).split(/\r\n|\r|\n/);
    pending = lines.pop()!;
    for (const line of lines) {
      if (line === '') {
        if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
        event = '';
        data = [];
      } else if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
  }
}
