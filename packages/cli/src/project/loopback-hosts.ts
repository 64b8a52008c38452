import { parseEnv, withEnvValue } from './env-file.js';

/**
 * `localhost`, `127.0.0.1` and `[::1]` reach the same machine, but browsers treat them as
 * different sites. A page on http://localhost:3001 calling an API on http://127.0.0.1:3000 makes
 * cross-site requests: the SameSite=Lax session cookie the API sets is never sent back, and every
 * call after sign-in is 401 with nothing saying why. These pure functions find such a mix in the
 * settings that name those addresses, and rewrite them all to `localhost`, the name authstrap
 * uses everywhere.
 */

/** An env file's text, by its path relative to the backend project (`.env`, `web/.env.local`). */
export interface EnvFileText {
  path: string;
  text: string;
}

/** The backend's addresses: its own URL, and the page origins allowed to call it (comma-separated). */
export const backendUrlVariables = ['AUTH_URL', 'ALLOWED_ORIGINS'];
/** A frontend's: its own address (Better Auth's), and the backend's as its server and its browser code use it. */
export const frontendUrlVariables = ['BETTER_AUTH_URL', 'AUTHSTRAP_URL', 'NEXT_PUBLIC_AUTHSTRAP_URL'];

export interface LoopbackHost {
  /** As URLs spell it once parsed: `localhost`, `127.0.0.1`, `[::1]`, `0.0.0.0`. */
  host: string;
  /** The settings that use it, as `AUTH_URL in .env`. */
  settings: string[];
}

export interface LoopbackMix {
  hosts: LoopbackHost[];
  /** What is mixed, where, and what it breaks: for a warning. */
  message: string;
  /** The settings the repair rewrites, as `AUTH_URL in .env`. */
  rewritten: string[];
  /** The env files that change, with every loopback host in those settings made `localhost`. */
  files: { path: string; before: string; after: string }[];
}

/**
 * The name a URL uses for this machine, or undefined when it names another one. `0.0.0.0` is
 * where a server listens, not an address to browse to; a URL that uses it is another site again.
 */
export function loopbackHostOf(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  const host = parsed.hostname;
  return host === 'localhost' || host === '[::1]' || host === '0.0.0.0' || /^127\.\d+\.\d+\.\d+$/.test(host) ? host : undefined;
}

/** The URLs in a setting's value: one, or a comma-separated list (ALLOWED_ORIGINS). */
const urlsIn = (value: string) => value.split(',').map((item) => item.trim()).filter(Boolean);

/** Each env file with the URL variables that are read in it. */
const withVariables = (backend: EnvFileText | undefined, frontends: EnvFileText[]) => [
  ...(backend ? [{ file: backend, variables: backendUrlVariables }] : []),
  ...frontends.map((file) => ({ file, variables: frontendUrlVariables })),
];

/** Every loopback host the settings use, `localhost` first, each with the settings that use it. */
export function loopbackHosts(backend: EnvFileText | undefined, frontends: EnvFileText[] = []): LoopbackHost[] {
  const hosts = new Map<string, string[]>([['localhost', []]]);
  for (const { file, variables } of withVariables(backend, frontends)) {
    const values = parseEnv(file.text);
    for (const name of variables) {
      for (const host of new Set(urlsIn(values[name] ?? '').map(loopbackHostOf))) {
        if (host !== undefined) hosts.set(host, [...(hosts.get(host) ?? []), `${name} in ${file.path}`]);
      }
    }
  }
  return [...hosts].filter(([, using]) => using.length > 0).map(([host, using]) => ({ host, settings: using }));
}

/**
 * A mix of names for this machine among the backend's URL settings (`AUTH_URL`,
 * `ALLOWED_ORIGINS`) and its frontends' (`BETTER_AUTH_URL`, `AUTHSTRAP_URL`,
 * `NEXT_PUBLIC_AUTHSTRAP_URL`), with the repair; undefined when they agree (or name no loopback
 * host at all). Other hosts are never touched.
 */
export function findLoopbackMix(backend: EnvFileText | undefined, frontends: EnvFileText[] = []): LoopbackMix | undefined {
  const hosts = loopbackHosts(backend, frontends);
  if (hosts.length < 2) return undefined;
  const names = hosts.map((entry) => entry.host);
  const message =
    `${names.slice(0, -1).join(', ')} and ${names.at(-1)} are mixed (${hosts.map((entry) => `${entry.host}: ${entry.settings.join(', ')}`).join('; ')}): ` +
    'browsers treat them as different sites, so the session cookie set by one is not sent from a page on the other and every request after sign-in is 401; use localhost everywhere';
  const files = withVariables(backend, frontends)
    .map(({ file, variables }) => ({ path: file.path, before: file.text, after: withLocalhost(file.text, variables) }))
    .filter((change) => change.after !== change.before);
  const rewritten = hosts.filter((entry) => entry.host !== 'localhost').flatMap((entry) => entry.settings);
  return { hosts, message, rewritten: [...new Set(rewritten)], files };
}

/**
 * The env file with every loopback host in the named variables made `localhost`, keeping scheme,
 * port and path; a list that then names an origin twice keeps it once. Each variable is rewritten
 * where the backend reads it (withEnvValue: its last assignment, quotes and comment kept).
 */
export function withLocalhost(text: string, variables: string[]): string {
  const values = parseEnv(text);
  let result = text;
  for (const name of variables.filter((variable) => values[variable] !== undefined)) {
    const rewritten = rewriteList(values[name]!);
    // A file no one-line edit can repair stays as it is: the check then still fails and says so.
    if (rewritten !== values[name]) result = withEnvValue(result, name, rewritten) ?? result;
  }
  return result;
}

function rewriteList(value: string): string {
  const items = value.split(',');
  const rewritten = items.map((item) => {
    const host = loopbackHostOf(item.trim());
    if (host === undefined || host === 'localhost') return item;
    // Only the host: `http://127.0.0.1:3000/api` -> `http://localhost:3000/api`.
    return item.replace(/^(\s*https?:\/\/(?:[^@/?#]*@)?)(\[[^\]]*\]|[^/:?#]+)/i, '$1localhost');
  });
  if (rewritten.every((item, index) => item === items[index])) return value;
  const seen = new Set<string>();
  return rewritten.filter((item) => !item.trim() || (!seen.has(item.trim()) && seen.add(item.trim()))).join(',');
}
