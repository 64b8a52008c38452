import type { BetterAuthClientPlugin } from 'better-auth/client';

/**
 * Better Auth's browser client talking to an authstrap backend's own `/api/auth`, for frontends
 * without a server of their own (a Vite app, a mobile app):
 *
 *   createAuthClient({ baseURL: 'http://localhost:3000/api/auth', plugins: [authstrapClient()] })
 *
 * The backend's routes have Better Auth's paths (/sign-up/email, /sign-in/email, /sign-out,
 * /get-session) but answer in authstrap's envelope, like every other route of the backend. This
 * plugin turns each answer into the body Better Auth's client expects, so `useSession`,
 * `signIn.email` and `signOut` work unchanged. Why the client adapts and the backend does not:
 * docs/decisions.md ("Better Auth's browser client on the backend's /api/auth").
 *
 * Imports nothing at run time: safe for any bundler and for React Native.
 */
export function authstrapClient() {
  return {
    id: 'authstrap',
    fetchPlugins: [
      {
        id: 'authstrap-envelope',
        name: 'authstrap envelope',
        hooks: {
          async onResponse(context: { response: Response; request: { url: string | URL } }) {
            return betterAuthResponse(context.response, authPath(context.request.url));
          },
        },
      },
    ],
  } satisfies BetterAuthClientPlugin;
}

/** The route after `/api/auth`, e.g. `/get-session` (what the body's shape depends on). */
function authPath(url: string | URL): string {
  const pathname = new URL(url, 'http://relative.invalid').pathname;
  const at = pathname.lastIndexOf('/api/auth/');
  return at === -1 ? pathname : pathname.slice(at + '/api/auth'.length);
}

/**
 * The same answer in Better Auth's shape. Bodies that are not authstrap's envelope pass through
 * unchanged, so the plugin is harmless in front of a Better Auth server.
 */
export async function betterAuthResponse(response: Response, path: string): Promise<Response> {
  if (!(response.headers.get('content-type') ?? '').includes('application/json')) return response;
  const envelope: unknown = await response.clone().json().catch(() => undefined);
  if (!isEnvelope(envelope)) return response;

  const headers = new Headers(response.headers);
  headers.delete('content-length');
  const answer = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, statusText: response.statusText, headers });

  if (envelope.success === false) {
    // No session is not an error to Better Auth: get-session answers null.
    if (path === '/get-session' && response.status === 401) return answer(200, null);
    const { code, message, details } = envelope.error ?? {};
    return answer(response.status, { code, message, details });
  }
  return answer(response.status, betterAuthBody(path, envelope.data));
}

interface Envelope {
  success: boolean;
  data?: unknown;
  error?: { code?: string; message?: string; details?: unknown };
}

const isEnvelope = (body: unknown): body is Envelope =>
  typeof body === 'object' && body !== null && typeof (body as Envelope).success === 'boolean';

/** Route by route, what Better Auth's server would have answered. */
function betterAuthBody(path: string, data: unknown): unknown {
  if (path === '/sign-out') return { success: true };
  if (typeof data !== 'object' || data === null) return data;
  const body = data as Record<string, unknown>;
  if (path === '/sign-in/email') return { redirect: false, token: body.token, user: betterAuthUser(body.user) };
  if (path === '/sign-up/email') return { token: body.token, user: betterAuthUser(body.user) };
  // The backend's extra `organizations` stay: the organization switcher needs them.
  if (path === '/get-session') return { ...body, user: betterAuthUser(body.user) };
  return data;
}

/** The backend's user keeps the spec's `email_verified`; Better Auth's is `emailVerified`. */
function betterAuthUser(user: unknown): unknown {
  if (typeof user !== 'object' || user === null || !('email_verified' in user)) return user;
  const { email_verified: emailVerified, ...rest } = user as Record<string, unknown>;
  return { ...rest, emailVerified };
}
