import type * as OpenIdClient from 'openid-client';
import { parseWebhookUrl, RefusedWebhookAddress, resolveWebhookAddress } from '../events/webhook-address.js';
import { pinnedFetch, type PinnedAddress } from '../http/pinned-fetch.js';

/**
 * The OIDC relying party of a connection, through openid-client (certified; no hand-written token
 * checks). Loaded only when a connection is made or used, so a backend without connections never
 * loads it (docs/enterprise-identity.md, section 8).
 *
 * Every request to the identity provider (discovery, the token endpoint, the keys) goes through
 * `guardedFetch`: https only, and never to a loopback, private, link-local or reserved address
 * (as webhooks: src/events/webhook-address.ts), unless SSO_ALLOW_PRIVATE_ADDRESSES=true (development
 * and tests; production refuses to start with it).
 */

const loadClient = (): Promise<typeof OpenIdClient> => import('openid-client');

/** What a connection's relying party needs: the stored discovery document and the client's credentials. */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  tokenAuthMethod: 'client_secret_basic' | 'client_secret_post';
  metadata: Record<string, unknown>;
}

/** A discovery or token request refused or failed: the message says why, for the 422 or the test's result. */
export class OidcProblem extends Error {
  override name = 'OidcProblem';
}

/** Algorithms an ID token may be signed with: asymmetric only. `none` and HS* (a secret the IdP shares with every client) never. */
const asymmetric = /^(RS|PS|ES)(256|384|512)$|^EdDSA$|^Ed25519$/;

const timeoutMs = 10_000;

/** The guard's refusal when openid-client wrapped it (its errors carry the fetch's as `cause`), else the error's own words. */
function problemOf(error: unknown, prefix: string): OidcProblem {
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof OidcProblem) return cause;
  }
  return new OidcProblem(`${prefix}${(error as Error).message}`);
}

/**
 * openid-client's `customFetch`: the address of every request checked first and then connected
 * to (http/pinned-fetch.ts: a name that answers differently the second time gains nothing),
 * redirects not followed.
 */
export function guardedFetch(allowPrivate: boolean): OpenIdClient.CustomFetch {
  return async (url, options) => {
    let target: URL;
    let address: PinnedAddress;
    try {
      target = parseWebhookUrl(url, allowPrivate);
      address = await resolveWebhookAddress(target, allowPrivate);
    } catch (error) {
      if (error instanceof RefusedWebhookAddress) throw new OidcProblem(error.message.replace('webhook URLs', 'identity provider URLs'));
      throw error;
    }
    // openid-client sends strings and forms; it streams nothing to an identity provider.
    if (options.body instanceof ReadableStream) throw new OidcProblem('a streamed request body is not sent to an identity provider');
    return pinnedFetch(target, address, { method: options.method, headers: options.headers, body: options.body, signal: options.signal });
  };
}

function configurationOf(client: typeof OpenIdClient, settings: OidcSettings, allowPrivate: boolean, clockSkewSeconds = 30): OpenIdClient.Configuration {
  const clientAuth = settings.tokenAuthMethod === 'client_secret_post' ? client.ClientSecretPost(settings.clientSecret) : client.ClientSecretBasic(settings.clientSecret);
  const configuration = new client.Configuration(settings.metadata as OpenIdClient.ServerMetadata, settings.clientId, { client_secret: settings.clientSecret, [client.clockTolerance]: clockSkewSeconds }, clientAuth);
  configuration[client.customFetch] = guardedFetch(allowPrivate);
  configuration.timeout = timeoutMs / 1000;
  if (allowPrivate) client.allowInsecureRequests(configuration);
  return configuration;
}

/**
 * Fetches `<issuer>/.well-known/openid-configuration` through the guard, checks its issuer is the
 * one typed, and keeps only the asymmetric ID token algorithms it lists (none left: refused).
 * The document as stored in `oidcMetadata`.
 */
export async function discover(issuer: string, allowPrivate: boolean): Promise<Record<string, unknown>> {
  const client = await loadClient();
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new OidcProblem('not a URL');
  }
  let configuration: OpenIdClient.Configuration;
  try {
    configuration = await client.discovery(url, 'discovery', undefined, undefined, {
      [client.customFetch]: guardedFetch(allowPrivate),
      execute: allowPrivate ? [client.allowInsecureRequests] : [],
      timeout: timeoutMs / 1000,
    });
  } catch (error) {
    throw problemOf(error, 'discovery failed: ');
  }
  const metadata = { ...configuration.serverMetadata() } as Record<string, unknown>;
  const listed = Array.isArray(metadata.id_token_signing_alg_values_supported) ? (metadata.id_token_signing_alg_values_supported as string[]) : ['RS256'];
  const accepted = listed.filter((alg) => asymmetric.test(alg));
  if (accepted.length === 0) throw new OidcProblem(`the provider signs ID tokens with ${listed.join(', ') || 'nothing'}: only asymmetric algorithms (RS, PS, ES, EdDSA) are accepted`);
  metadata.id_token_signing_alg_values_supported = accepted;
  return metadata;
}

/** The sign-in's secrets, kept in the flow row until the callback. */
export interface OidcStart {
  url: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The authorization URL: code flow, PKCE S256, state and nonce. */
export async function authorizationUrl(settings: OidcSettings & { scopes: string; redirectUri: string }, allowPrivate: boolean): Promise<OidcStart> {
  const client = await loadClient();
  const configuration = configurationOf(client, settings, allowPrivate);
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(configuration, {
    redirect_uri: settings.redirectUri,
    scope: settings.scopes,
    response_type: 'code',
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return { url: url.href, state, nonce, codeVerifier };
}

/**
 * The callback's code exchanged for tokens, and the ID token's claims once openid-client has
 * checked its signature (an algorithm the stored document lists), issuer, audience, times, nonce,
 * and the state and PKCE verifier of the flow.
 */
export async function redeemCode(
  settings: OidcSettings & { redirectUri: string },
  callbackUrl: URL,
  expected: { state: string; nonce: string; codeVerifier: string },
  clockSkewSeconds: number,
  allowPrivate: boolean,
): Promise<Record<string, unknown>> {
  const client = await loadClient();
  const configuration = configurationOf(client, settings, allowPrivate, clockSkewSeconds);
  try {
    const tokens = await client.authorizationCodeGrant(
      configuration,
      callbackUrl,
      { pkceCodeVerifier: expected.codeVerifier, expectedState: expected.state, expectedNonce: expected.nonce, idTokenExpected: true },
      { redirect_uri: settings.redirectUri },
    );
    const claims = tokens.claims();
    if (!claims) throw new OidcProblem('the provider sent no ID token');
    return claims as Record<string, unknown>;
  } catch (error) {
    throw problemOf(error, '');
  }
}

/**
 * The provider's signing keys (its discovery's `jwks_uri`), fetched through the guard: the daily
 * refresh's proof that sign-ins can still verify ID tokens. openid-client fetches them itself at
 * each callback; this only says whether they answer. How many keys, or an OidcProblem.
 */
export async function fetchSigningKeys(metadata: Record<string, unknown>, allowPrivate: boolean): Promise<number> {
  const jwksUri = metadata.jwks_uri;
  if (typeof jwksUri !== 'string') throw new OidcProblem('the discovery document names no jwks_uri');
  let response: Response;
  try {
    response = await guardedFetch(allowPrivate)(jwksUri, { method: 'GET', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) } as never);
  } catch (error) {
    throw problemOf(error, 'the signing keys could not be fetched: ');
  }
  if (response.status !== 200) throw new OidcProblem(`the signing keys (${jwksUri}) answered ${response.status}`);
  let keys: unknown;
  try {
    keys = ((await response.json()) as { keys?: unknown }).keys;
  } catch {
    throw new OidcProblem(`the signing keys (${jwksUri}) are not JSON`);
  }
  if (!Array.isArray(keys) || keys.length === 0) throw new OidcProblem(`the signing keys (${jwksUri}) list no key`);
  return keys.length;
}
