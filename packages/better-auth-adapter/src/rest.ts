import { randomUUID } from 'node:crypto';
import { APIError } from 'better-auth/api';
import { backoffMs, defaultMaxRetryWaitMs, defaultRetries, isNetworkFailure, sleep, waitAfterAnswer, type RetryOptions } from './retry.js';

/** The authstrap backend's REST API, as the service key sees it: the envelope unwrapped, errors thrown. */

export class AuthstrapRequestError extends Error {
  override name = 'AuthstrapRequestError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, string>,
  ) {
    super(message);
  }
}

export interface Page<Row> {
  rows: Row[];
  total: number;
}

export interface RestClientOptions extends RetryOptions {
  /** The backend's base address, e.g. http://localhost:3000. */
  baseUrl: string;
  /** SERVICE_API_KEY of the backend. */
  serviceKey: string;
  /** Another fetch (tests, instrumentation); the global one by default. */
  fetch?: typeof fetch;
}

/** The header that puts a request in one of the backend's transactions (its src/http/service-transactions.ts). */
const transactionHeader = 'x-authstrap-transaction';
const transactionsPath = '/api/service/transactions';

/**
 * The refusals of the backend's sign-in rule (its docs/enterprise-identity.md, 3.4): a session or
 * password Better Auth tried to keep for an address that must sign in with single sign-on, a user
 * their organization's directory turned off, a banned user. Better Auth answers them as its own 403.
 */
const signInRefusals = new Set(['SSO_REQUIRED', 'DEPROVISIONED', 'BANNED']);

/**
 * The backend's refusals of a change Better Auth makes on a person's behalf, answered as Better
 * Auth's own 409 with the backend's code and words: a name or address their organization's
 * directory owns (its docs/scim.md), changed by `updateUser` or an address change.
 */
const changeRefusals = new Set(['DIRECTORY_MANAGED']);

/**
 * `transaction`: every request of this client runs in that transaction of the backend.
 * `headersOfWrites`: headers each write (any method but GET) sends besides the key's.
 *
 * Sent again (retry.ts): a read; a write outside a transaction, with an Idempotency-Key of its
 * own, the same on every attempt, so that the backend applies it once however often it arrives;
 * a transaction's begin, commit and rollback, which its id makes safe to repeat. A request inside
 * a transaction is sent once: one cut off rolls the transaction back, and the whole of it fails.
 */
export function restClient(
  { baseUrl, serviceKey, fetch: fetchImpl = fetch, retries = defaultRetries, maxRetryWaitMs = defaultMaxRetryWaitMs }: RestClientOptions,
  transaction?: string,
  headersOfWrites: () => Record<string, string> = () => ({}),
) {
  async function call<T>(method: string, path: string, options: { query?: Record<string, string>; body?: unknown; sendsAgain?: boolean } = {}): Promise<Envelope<T> | undefined> {
    const url = new URL(path, baseUrl);
    for (const [name, value] of Object.entries(options.query ?? {})) url.searchParams.set(name, value);
    const keyed = method !== 'GET' && transaction === undefined;
    const sendsAgain = options.sendsAgain ?? transaction === undefined;
    const init: RequestInit = {
      method,
      headers: {
        authorization: `Bearer ${serviceKey}`,
        ...(transaction === undefined ? {} : { [transactionHeader]: transaction }),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(method === 'GET' ? {} : headersOfWrites()),
        ...(keyed ? { 'idempotency-key': randomUUID() } : {}),
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    };
    for (let attempt = 0; ; attempt++) {
      const last = !sendsAgain || attempt >= retries;
      let response: Response;
      let text: string;
      try {
        response = await fetchImpl(url, init);
        text = await response.text();
      } catch (error) {
        if (last || !isNetworkFailure(error)) throw error;
        await sleep(backoffMs(attempt));
        continue;
      }
      const waitMs = last ? undefined : waitAfterAnswer(response.status, response.headers.get('retry-after'), attempt);
      if (waitMs !== undefined && waitMs <= maxRetryWaitMs) {
        await sleep(waitMs);
        continue;
      }
      return answerOf<T>(`${method} ${url.pathname}`, response, text);
    }
  }

  return {
    /** Opens the transaction this client was made for (its id chosen here, so a proxy can route by it). */
    async begin(): Promise<void> {
      try {
        await call('POST', transactionsPath, { sendsAgain: true });
      } catch (error) {
        if (!(error instanceof AuthstrapRequestError && error.status === 404)) throw error;
        throw new AuthstrapRequestError(404, error.code, `${error.message}: this backend has no transactions yet; run \`authstrap generate\` in it, or pass authstrapAdapter({ transactions: false })`);
      }
    },
    async commit(): Promise<void> {
      await call('POST', `${transactionsPath}/commit`, { sendsAgain: true });
    },
    async rollback(): Promise<void> {
      await call('POST', `${transactionsPath}/rollback`, { sendsAgain: true });
    },
    async list<Row>(path: string, query: Record<string, string>): Promise<Page<Row>> {
      const answer = await call<Row[]>('GET', path, { query });
      return { rows: answer!.data, total: answer!.meta?.total ?? answer!.data.length };
    },
    async create<Row>(path: string, body: unknown, query: Record<string, string> = {}): Promise<Row> {
      return (await call<Row>('POST', path, { body, query }))!.data;
    },
    /** PATCH one record; null when it does not exist. */
    async update<Row>(path: string, id: string, body: unknown): Promise<Row | null> {
      try {
        return (await call<Row>('PATCH', `${path}/${encodeURIComponent(id)}`, { body }))!.data;
      } catch (error) {
        if (error instanceof AuthstrapRequestError && error.status === 404) return null;
        throw error;
      }
    },
    async updateMany(path: string, query: Record<string, string>, body: unknown): Promise<number> {
      return (await call<{ count: number }>('PATCH', path, { query, body }))!.data.count;
    },
    async remove(path: string, id: string): Promise<void> {
      try {
        await call('DELETE', `${path}/${encodeURIComponent(id)}`);
      } catch (error) {
        if (error instanceof AuthstrapRequestError && error.status === 404) return;
        throw error;
      }
    },
    async removeMany(path: string, query: Record<string, string>): Promise<number> {
      return (await call<{ count: number }>('DELETE', path, { query }))!.data.count;
    },
    /** Deletes one record a filter matches and returns it, in one statement; null when none matched. */
    async consumeOne<Row>(path: string, query: Record<string, string>): Promise<Row | null> {
      return (await call<Row | null>('POST', `${path}/consume-one`, { query }))!.data;
    },
    /** Adds to one record's counters (and sets values) while the filter holds, in one statement; null when none matched. */
    async incrementOne<Row>(path: string, query: Record<string, string>, body: { increment: Record<string, number>; set: Record<string, unknown> }): Promise<Row | null> {
      return (await call<Row | null>('POST', `${path}/increment-one`, { query, body }))!.data;
    },
  };
}

export type RestClient = ReturnType<typeof restClient>;

type Envelope<T> = { success: true; data: T; meta?: { total: number } };

/** The answer's envelope (undefined for a 204); a refusal thrown, as Better Auth's own error where it has one. */
function answerOf<T>(request: string, response: Response, text: string): Envelope<T> | undefined {
  if (response.status === 204) return undefined;
  let envelope: Envelope<T> | { success: false; error: { code: string; message: string; details?: Record<string, string> } } | undefined;
  try {
    envelope = JSON.parse(text);
  } catch {
    envelope = undefined;
  }
  if (response.ok && envelope?.success) return envelope;
  const error = envelope && !envelope.success ? envelope.error : undefined;
  if (response.status === 403 && error && signInRefusals.has(error.code)) {
    // What the browser is told: the code, the backend's words, and where to sign in instead.
    throw new APIError('FORBIDDEN', { code: error.code, message: error.message, ...error.details });
  }
  if (response.status === 409 && error && changeRefusals.has(error.code)) throw new APIError('CONFLICT', { code: error.code, message: error.message });
  // The details name the fields the backend refused: part of the message, where logs show it.
  const details = error?.details ? ` (${Object.entries(error.details).map(([field, problem]) => `${field}: ${problem}`).join('; ')})` : '';
  throw new AuthstrapRequestError(response.status, error?.code ?? 'UNKNOWN', `${request}: ${error?.message ?? response.statusText}${details}`, error?.details);
}
