import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from 'better-auth/node';
import { allowedOrigin } from '../../../../examples/saas-backend/test/support/backend.js';
import { startOidcProvider, TestBrowser } from '../../../../examples/saas-backend/test/support/oidc-provider.js';

type Auth = Parameters<typeof toNodeHandler>[0];

/** Better Auth's session as its `get-session` answers it over HTTP. */
export interface PluginSession {
  user: { id: string; email: string; name: string };
  session: { id: string };
}

/**
 * What Better Auth's `sso` plugin needs in a test: `oidc-provider` on loopback (the identity
 * provider of the backend's own SSO tests) and Better Auth served over HTTP on loopback, since the
 * provider sends the browser back to it. Make Better Auth with `appUrl` as its base URL and the
 * provider's origin trusted, then `serve` it.
 */
export async function startSsoStage() {
  const idp = await startOidcProvider();
  let auth: Auth | undefined;
  const app = http.createServer((req, res) => (auth ? void toNodeHandler(auth)(req, res) : res.writeHead(503).end()));
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  const appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;

  return {
    idp,
    appUrl,
    serve(served: Auth) {
      auth = served;
    },
    /**
     * A browser signs in through the plugin (started by address or by provider) as `subject` at
     * the identity provider, which asserts `email`: Better Auth's sign-in, the provider's login and
     * consent, Better Auth's callback. Where it landed (the error it was sent back with), and the
     * session it holds then.
     */
    async signIn(subject: string, email: string, start: { email: string } | { providerId: string }) {
      idp.setAccount(subject, { email, name: subject });
      idp.signInAs(subject);
      const browser = new TestBrowser([idp.issuer, appUrl]);
      const started = await browser.request(`${appUrl}/api/auth/sign-in/sso`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: allowedOrigin },
        body: JSON.stringify({ ...start, callbackURL: `${allowedOrigin}/dashboard`, errorCallbackURL: `${allowedOrigin}/sign-in` }),
      });
      if (started.status !== 200) throw new Error(`sign-in/sso answered ${started.status}: ${await started.text()}`);
      const landed = new URL((await browser.follow(((await started.json()) as { url: string }).url)).location);
      const cookie = [...(browser.jar.get(appUrl) ?? [])].map(([name, value]) => `${name}=${value}`).join('; ');
      const session = (await (await fetch(`${appUrl}/api/auth/get-session`, { headers: { cookie } })).json()) as PluginSession | null;
      return { landedOn: `${landed.origin}${landed.pathname}`, error: landed.searchParams.get('error'), session, cookie };
    },
    async close() {
      await idp.close();
      await new Promise((resolve) => app.close(resolve));
    },
  };
}
