/**
 * A Server-Sent Events client for the tests, reading a real stream over HTTP as the WHATWG
 * EventSource does (fields `id`, `event`, `data`, `retry`; comment lines; a blank line ends a
 * message), without reconnecting by itself: the tests resume with Last-Event-ID themselves.
 */

export interface StreamMessage {
  /** The last event id as a client holds it after this message (an `id:` line, or the one before). */
  id: string | undefined;
  event: string;
  data: string;
  retry?: number;
}

export interface OpenStream {
  status: number;
  /** The error envelope, when the stream was refused. */
  body?: any;
  /** Messages with data, in the order received. */
  messages: StreamMessage[];
  /** The last event id received (from any message, with data or not), as EventSource keeps it. */
  readonly lastEventId: string | undefined;
  /** Resolves when the server has ended the stream. */
  readonly ended: Promise<void>;
  /** Waits for a message matching `match` (resolves at once for one already received). */
  next(match: (message: StreamMessage) => boolean, timeoutMs?: number): Promise<StreamMessage>;
  /** The data messages of these event types, parsed. */
  events(...types: string[]): any[];
  close(): void;
}

export async function openStream(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await fetch(new URL(path, baseUrl), { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  const messages: StreamMessage[] = [];
  const waiters = new Set<() => void>();
  let lastEventId: string | undefined;
  if (!response.ok || !response.headers.get('content-type')?.startsWith('text/event-stream')) {
    const body = await response.json().catch(() => undefined);
    return { status: response.status, body, messages, lastEventId: undefined, ended: Promise.resolve(), next: () => Promise.reject(new Error(`refused: ${response.status}`)), events: () => [], close() {} };
  }
  const ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    let current: { id?: string; event?: string; data: string[]; retry?: number; hasId: boolean } = { data: [], hasId: false };
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        const lines = (buffer + decoder.decode(chunk, { stream: true })).split('\n');
        buffer = lines.pop()!;
        for (const raw of lines) {
          const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
          if (line === '') {
            if (current.hasId) lastEventId = current.id;
            if (current.data.length > 0) {
              messages.push({ id: lastEventId, event: current.event ?? 'message', data: current.data.join('\n'), ...(current.retry !== undefined ? { retry: current.retry } : {}) });
              for (const wake of waiters) wake();
            }
            current = { data: [], hasId: false };
            continue;
          }
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') current.data.push(value);
          else if (field === 'event') current.event = value;
          else if (field === 'id') Object.assign(current, { id: value, hasId: true });
          else if (field === 'retry' && /^\d+$/.test(value)) current.retry = Number(value);
        }
      }
    } catch {
      // Closed by the test (abort) or cut by the server: either ends the stream.
    } finally {
      for (const wake of waiters) wake();
    }
  })();
  /** What came, for a failure's message: the last few messages, and how many in all. */
  const received = () => `${messages.length} messages, the last: ${messages.slice(-5).map((message) => `${message.event} ${message.data.slice(0, 120)}`).join(' | ')}`;
  let done = false;
  void ended.then(() => (done = true));
  return {
    status: response.status,
    messages,
    get lastEventId() {
      return lastEventId;
    },
    ended,
    async next(match, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      // Each message is looked at once: a burst of thousands wakes this many times.
      let looked = 0;
      for (;;) {
        for (; looked < messages.length; looked++) if (match(messages[looked]!)) return messages[looked]!;
        if (done) throw new Error(`the stream ended without the message; received: ${received()}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no such message within ${timeoutMs} ms; received: ${received()}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          const wake = () => {
            clearTimeout(timer);
            waiters.delete(wake);
            resolve();
          };
          waiters.add(wake);
        });
      }
    },
    events: (...types) => messages.filter((message) => types.length === 0 || types.includes(message.event)).map((message) => JSON.parse(message.data)),
    close: () => controller.abort(),
  };
}
