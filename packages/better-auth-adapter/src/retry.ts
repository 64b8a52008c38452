/**
 * When the adapter sends a request again: the backend's answers that say "not now" (a 503 in a
 * failover or a drain, a 429 or a keyed write's 409 that says when with Retry-After) and a
 * connection that broke (reset, refused) before an answer was read. Reads are safe to send again;
 * a write is, with the Idempotency-Key it was first sent with (the backend then applies it once).
 * The same rule as the backend's typed client (its authstrap-client.ts), which imports nothing and
 * so cannot share this file.
 */
export interface RetryOptions {
  /** How often a request is sent again (default 3): four attempts at most. */
  retries?: number;
  /** The longest Retry-After waited for; a longer one is the answer, thrown (default 10000 ms). */
  maxRetryWaitMs?: number;
}

export const defaultRetries = 3;
export const defaultMaxRetryWaitMs = 10_000;

/** Without a Retry-After: 0.5 s, 1 s, 2 s ... up to 8 s, each give or take a quarter. */
export const backoffMs = (attempt: number) => Math.min(8000, 500 * 2 ** attempt) * (0.75 + Math.random() / 2);

/**
 * How long to wait before sending the request again after this answer, or undefined when the
 * answer is final: a 503 always (Retry-After, or the backoff), a 429 or 409 only when it says when.
 */
export function waitAfterAnswer(status: number, retryAfter: string | null, attempt: number): number | undefined {
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) * 1000 : undefined;
  if (status === 503) return seconds ?? backoffMs(attempt);
  return status === 429 || status === 409 ? seconds : undefined;
}

/**
 * Whether fetch failed for the network (undici's `TypeError: fetch failed`, whose cause is the
 * socket's ECONNRESET, ECONNREFUSED, "other side closed" ...), not because it was aborted.
 */
export const isNetworkFailure = (error: unknown): boolean => error instanceof TypeError;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
