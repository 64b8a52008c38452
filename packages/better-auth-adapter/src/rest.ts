import { APIError } from 'better-auth/api';

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

export interface RestClientOptions {
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
 */
export function restClient({ baseUrl, serviceKey, fetch: fetchImpl = fetch }: RestClientOptions, transaction?: string, headersOfWrites: () => Record<string, string> = () => ({})) {
  async function call<T>(method: string, path: string, options: { query?: Record<string, string>; body?: unknown } = {}): Promise<{ data: T; meta?: { total: number } } | undefined> {
    const url = new URL(path, baseUrl);
    for (const [name, value] of Object.entries(options.query ?? {})) url.searchParams.set(name, value);
    const response = await fetchImpl(url, {
      method,
      headers: {
        authorization: `Bearer ${serviceKey}`,
        ...(transaction === undefined ? {} : { [transactionHeader]: transaction }),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(method === 'GET' ? {} : headersOfWrites()),
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    if (response.status === 204) return undefined;
    const envelope = (await response.json().catch(() => undefined)) as
      | { success: true; data: T; meta?: { total: number } }
      | { success: false; error: { code: string; message: string; details?: Record<string, string> } }
      | undefined;
    if (!response.ok || !envelope?.success) {
      const error = envelope && !envelope.success ? envelope.error : undefined;
      if (response.status === 403 && error && signInRefusals.has(error.code)) {
        // What the browser is told: the code, the backend's words, and where to sign in instead.
        throw new APIError('FORBIDDEN', { code: error.code, message: error.message, ...error.details });
      }
      if (response.status === 409 && error && changeRefusals.has(error.code)) throw new APIError('CONFLICT', { code: error.code, message: error.message });
      // The details name the fields the backend refused: part of the message, where logs show it.
      const details = error?.details ? ` (${Object.entries(error.details).map(([field, problem]) => `${field}: ${problem}`).join('; ')})` : '';
      throw new AuthstrapRequestError(response.status, error?.code ?? 'UNKNOWN', `${method} ${url.pathname}: ${error?.message ?? response.statusText}${details}`, error?.details);
    }
    return envelope;
  }

  return {
    /** Opens the transaction this client was made for (its id chosen here, so a proxy can route by it). */
    async begin(): Promise<void> {
      try {
        await call('POST', transactionsPath);
      } catch (error) {
        if (!(error instanceof AuthstrapRequestError && error.status === 404)) throw error;
        throw new AuthstrapRequestError(404, error.code, `${error.message}: this backend has no transactions yet; run \`authstrap generate\` in it, or pass authstrapAdapter({ transactions: false })`);
      }
    },
    async commit(): Promise<void> {
      await call('POST', `${transactionsPath}/commit`);
    },
    async rollback(): Promise<void> {
      await call('POST', `${transactionsPath}/rollback`);
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
