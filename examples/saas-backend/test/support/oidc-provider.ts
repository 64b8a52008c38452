import { generateKeyPairSync, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { createMemoryAdapter } from 'oidc-provider/lib/adapters/memory_adapter.js';

/**
 * A real OpenID provider on loopback for the single sign-on tests: `oidc-provider` (certified), its
 * clients added while it runs (each connection's redirect URI is known only once the connection
 * exists), its accounts set by the test, and its login and consent pages answered by the test:
 * `signInAs(account)` names who signs in next.
 */

export interface OidcAccount {
  email: string;
  email_verified?: boolean;
  name?: string;
}

export interface OidcClient {
  clientId: string;
  clientSecret: string;
}

export interface TestOidcProvider {
  issuer: string;
  provider: Provider;
  /** New client credentials, registered once the connection (and so its redirect URI) exists. */
  newClient(): OidcClient;
  /** Registers `client` with its only redirect URI. */
  registerClient(client: OidcClient, redirectUri: string): void;
  /** The account `subject` with these claims. */
  setAccount(subject: string, account: OidcAccount): void;
  /** Who signs in at the next login page. */
  signInAs(subject: string): void;
  /** The provider's signing key (a JWK with its private part): what a test forges tokens against. */
  signingKey: Record<string, unknown>;
  /** Replaces the ID token of the next token answer with what `forge` makes of it (a forged or re-signed token). */
  forgeNextIdToken(forge: (original: string) => Promise<string>): void;
  close(): Promise<void>;
}

export async function startOidcProvider(): Promise<TestOidcProvider> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map<string, OidcAccount>();
  const clients = new Map<string, Record<string, unknown>>();
  let nextSubject: string | undefined;

  const signingKey = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: 'test-rs256', use: 'sig', alg: 'RS256' };
  const memory = createMemoryAdapter();
  const provider = new Provider(issuer, {
    // Clients come from the map (added while running); everything else lives in memory.
    adapter: (model: string) => {
      const inner = memory(model);
      if (model !== 'Client') return inner;
      return Object.assign(Object.create(inner), { find: async (id: string) => clients.get(id) });
    },
    findAccount: async (_ctx: unknown, subject: string) => {
      const account = accounts.get(subject);
      if (!account) return undefined;
      return { accountId: subject, claims: async () => ({ sub: subject, email: account.email, email_verified: account.email_verified ?? true, name: account.name ?? account.email.split('@')[0] }) };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The scopes' claims in the ID token itself, as Okta and Entra ID put them.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    jwks: { keys: [signingKey] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
  });
  // Quiet: a test's refused token is expected.
  provider.on('server_error', () => {});
  // The token endpoint's answer, as a man in the middle (or a malicious provider) would change it.
  let forge: ((original: string) => Promise<string>) | undefined;
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body as { id_token?: unknown } | undefined;
    if (forge && ctx.path === '/token' && typeof body?.id_token === 'string') {
      const forging = forge;
      forge = undefined;
      ctx.body = { ...body, id_token: await forging(body.id_token) };
    }
  });

  const callback = provider.callback();
  server.on('request', async (req, res) => {
    try {
      if (!req.url?.startsWith('/interaction/')) return callback(req, res);
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login') {
        if (!nextSubject) throw new Error('the test named nobody to sign in (signInAs)');
        return await provider.interactionFinished(req, res, { login: { accountId: nextSubject } }, { mergeWithLastSubmission: false });
      }
      const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      return await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    } catch (error) {
      res.statusCode = 500;
      res.end(String(error));
    }
  });

  return {
    issuer,
    provider,
    signingKey,
    newClient: () => ({ clientId: `client-${randomBytes(6).toString('hex')}`, clientSecret: randomBytes(24).toString('base64url') }),
    registerClient(client, redirectUri) {
      clients.set(client.clientId, {
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      });
    },
    forgeNextIdToken: (next) => void (forge = next),
    setAccount: (subject, account) => void accounts.set(subject, account),
    signInAs: (subject) => void (nextSubject = subject),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export { TestBrowser } from './test-browser.js';
