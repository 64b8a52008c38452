import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from 'better-auth/node';
import { allowedOrigin } from '../../../../examples/saas-backend/test/support/backend.js';
import { startOidcProvider, TestBrowser } from '../../../../examples/saas-backend/test/support/oidc-provider.js';
import { formOf, startSamlIdp, type PostedForm, type SamlUser } from '../../../../examples/saas-backend/test/support/saml-idp.js';

type Auth = Parameters<typeof toNodeHandler>[0];

/** Better Auth's session as its `get-session` answers it over HTTP. */
export interface PluginSession {
  user: { id: string; email: string; name: string };
  session: { id: string };
}

/** How a browser starts a sign-in through the plugin: by address or by provider. */
type Start = { email: string } | { providerId: string };

/**
 * What Better Auth's `sso` plugin needs in a test: the identity providers of the backend's own SSO
 * tests on loopback (`oidc-provider`, and the pysaml2 SAML IdP, whose signatures are xmlsec1's) and
 * Better Auth served over HTTP on loopback, since the providers send the browser back to it. Make
 * Better Auth with `appUrl` as its base URL and both providers' origins trusted (`idpOrigins`),
 * then `serve` it.
 */
export async function startSsoStage() {
  const idp = await startOidcProvider();
  const samlIdp = await startSamlIdp();
  let auth: Auth | undefined;
  const app = http.createServer((req, res) => (auth ? void toNodeHandler(auth)(req, res) : res.writeHead(503).end()));
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  const appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  const samlOrigin = new URL(samlIdp.url).origin;

  /** Better Auth's sign-in/sso, as the app's page calls it: the provider's URL to send the browser to. */
  async function start(browser: TestBrowser, how: Start): Promise<string> {
    const started = await browser.request(`${appUrl}/api/auth/sign-in/sso`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: allowedOrigin },
      body: JSON.stringify({ ...how, callbackURL: `${allowedOrigin}/dashboard`, errorCallbackURL: `${allowedOrigin}/sign-in` }),
    });
    if (started.status !== 200) throw new Error(`sign-in/sso answered ${started.status}: ${await started.text()}`);
    return ((await started.json()) as { url: string }).url;
  }

  /** Where the browser landed (the error it was sent back with), and the session it holds then. */
  async function outcome(browser: TestBrowser, location: string) {
    const landed = new URL(location);
    const cookie = [...(browser.jar.get(appUrl) ?? [])].map(([name, value]) => `${name}=${value}`).join('; ');
    const session = (await (await fetch(`${appUrl}/api/auth/get-session`, { headers: { cookie } })).json()) as PluginSession | null;
    return { landedOn: `${landed.origin}${landed.pathname}`, error: landed.searchParams.get('error'), session, cookie };
  }

  /** Posts an IdP's form to Better Auth's ACS from the IdP's origin, as a browser does, and follows Better Auth's redirect. */
  async function postToAcs(browser: TestBrowser, form: PostedForm) {
    const answer = await browser.request(form.action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: samlOrigin },
      body: new URLSearchParams({ SAMLResponse: form.SAMLResponse, ...(form.RelayState ? { RelayState: form.RelayState } : {}) }).toString(),
    });
    const location = answer.headers.get('location');
    if (!location) throw new Error(`the ACS answered ${answer.status} without a redirect: ${await answer.text()}`);
    const next = new URL(location, form.action);
    const landed = [appUrl, samlOrigin].includes(next.origin) ? (await browser.follow(next.href)).location : next.href;
    return outcome(browser, landed);
  }

  return {
    idp,
    samlIdp,
    appUrl,
    idpOrigins: [idp.issuer, samlOrigin],
    serve(served: Auth) {
      auth = served;
    },
    /**
     * A browser signs in through the plugin's OIDC as `subject` at the identity provider, which
     * asserts `email`: Better Auth's sign-in, the provider's login and consent, Better Auth's callback.
     */
    async signIn(subject: string, email: string, how: Start) {
      idp.setAccount(subject, { email, name: subject });
      idp.signInAs(subject);
      const browser = new TestBrowser([idp.issuer, appUrl]);
      return outcome(browser, (await browser.follow(await start(browser, how))).location);
    },
    /**
     * A browser signs in through the plugin's SAML as `user`: Better Auth's sign-in (an
     * AuthnRequest by HTTP-Redirect), the IdP's page (a response with a signed assertion, answering
     * that request), its form posted to Better Auth's ACS from the IdP's origin as a browser posts
     * it, and Better Auth's redirect after.
     */
    async signInWithSaml(user: SamlUser, how: Start) {
      const browser = new TestBrowser([samlOrigin, appUrl]);
      const authnRequest = await start(browser, how);
      await samlIdp.next({ user });
      const form = formOf(await (await browser.request(authnRequest)).text());
      return { ...(await postToAcs(browser, form)), form };
    },
    /** The IdP's `form` posted again, by another browser (someone who captured it): a replay. */
    replaySaml: (form: PostedForm) => postToAcs(new TestBrowser([samlOrigin, appUrl]), form),
    async close() {
      await idp.close();
      await samlIdp.close();
      await new Promise((resolve) => app.close(resolve));
    },
  };
}
