/**
 * ALLOWED_ORIGINS as the backend reads it (`parseOrigins` in templates/backend/project/src/config.ts;
 * test/allowed-origins.test.ts runs both on the same entries, so that they cannot drift): a
 * comma-separated list, each entry trimmed, blanks dropped, and each made the origin a browser
 * sends (`HTTP://LocalHost:5173/` is `http://localhost:5173`). An entry with a path, query,
 * fragment or credentials, or that is no URL (`*`), is refused: the backend does not start.
 */

export interface AllowedOrigin {
  /** As written in the list. */
  entry: string;
  /** The origin the backend makes of it; undefined when the backend refuses the entry. */
  origin?: string;
}

/** The origin the backend makes of one entry of ALLOWED_ORIGINS, or undefined when it refuses it. */
export function originOf(entry: string): string | undefined {
  try {
    const url = new URL(entry);
    const bare = url.pathname === '/' && !/[?#]/.test(entry) && !url.username && !url.password;
    return bare && url.origin !== 'null' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

/** The entries of ALLOWED_ORIGINS (in a map of env values), each with its origin. */
export function allowedOrigins(env: Record<string, string | undefined>): AllowedOrigin[] {
  return (env.ALLOWED_ORIGINS ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => ({ entry, origin: originOf(entry) }));
}

/** Whether the list lets `origin` in, compared as the backend compares it (after normalising both). */
export const allowsOrigin = (allowed: AllowedOrigin[], origin: string) => allowed.some((item) => item.origin !== undefined && item.origin === originOf(origin));
