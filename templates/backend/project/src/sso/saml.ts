import { webcrypto, X509Certificate } from 'node:crypto';
import type * as NodeSaml from '@node-saml/node-saml';
import { DOMParser } from '@xmldom/xmldom';
import { guardedFetch, OidcProblem } from './oidc.js';

/**
 * The SAML service provider of a connection, through node-saml (signatures checked by xml-crypto;
 * none here). Loaded only when a SAML connection is made or used, as openid-client for OIDC
 * (docs/enterprise-identity.md, section 8). What this file adds around node-saml is what node-saml
 * 5.1 leaves to its caller: the SP's key pair, the IdP's metadata, and the checks of the signed
 * assertion it does not make (issuer, recipient, the assertion's ID and lifetime for the replay table).
 */

const loadSaml = (): Promise<typeof NodeSaml> => import('@node-saml/node-saml');

/** Metadata refused or unreadable, a response refused: the message says why (the 422, the log, lastTest). */
export class SamlProblem extends Error {
  override name = 'SamlProblem';
}

export const metadataLimitBytes = 100 * 1024;
const timeoutMs = 10_000;

const samlMetadataNs = 'urn:oasis:names:tc:SAML:2.0:metadata';
const xmlDsigNs = 'http://www.w3.org/2000/09/xmldsig#';
const redirectBinding = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const postBinding = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

/** What a connection's service provider needs. */
export interface SamlSettings {
  /** The SP's entity ID (its metadata URL) and ACS. */
  spEntityId: string;
  acsUrl: string;
  spPrivateKey: string;
  spCertificate: string;
  idpEntityId: string;
  idpSsoUrl: string;
  /** The IdP's signing certificates valid now: several during a rollover. */
  idpCertificates: string[];
  signAuthnRequests: boolean;
  allowIdpInitiated: boolean;
  clockSkewSeconds: number;
}

/** An IdP as its metadata (or its admin) describes it. */
export interface IdpDescription {
  entityId: string;
  ssoUrl: string;
  certificates: string[];
}

/** A certificate as stored in authstrap_sso_certificate. */
export interface CertificateFacts {
  pem: string;
  fingerprintSha256: string;
  subject: string | null;
  notBefore: Date;
  notAfter: Date;
}

/** A PEM certificate (or the bare base64 of metadata) read by node:crypto; unreadable: a SamlProblem. */
export function certificateFacts(text: string): CertificateFacts {
  const body = text.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+=*$/.test(body)) throw new SamlProblem('a certificate is not PEM or base64');
  const pem = `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch {
    throw new SamlProblem('a certificate is not a readable X.509 certificate');
  }
  return {
    pem,
    fingerprintSha256: certificate.fingerprint256.replace(/:/g, '').toLowerCase(),
    subject: certificate.subject.replace(/\n/g, ', ') || null,
    notBefore: new Date(certificate.validFrom),
    notAfter: new Date(certificate.validTo),
  };
}

/** XML parsed without a document type (entities are how XML bombs and external reads get in) and without a parser's warnings passing as success. */
export function parseXml(xml: string, what: string): Document {
  if (/<!DOCTYPE/i.test(xml)) throw new SamlProblem(`${what} has a DOCTYPE: refused`);
  let failure: string | undefined;
  const fail = (message: string) => {
    failure ??= message;
  };
  // xmldom recovers from errors and mismatched tags (an unclosed element is closed for you): any report refuses here.
  const parser = new DOMParser({ errorHandler: { warning: fail, error: fail, fatalError: fail } });
  const document = parser.parseFromString(xml, 'text/xml') as unknown as Document;
  if (failure || !document?.documentElement) throw new SamlProblem(`${what} is not well-formed XML`);
  return document;
}

const childrenNamed = (parent: Element, namespace: string, name: string): Element[] =>
  Array.from(parent.childNodes as unknown as ArrayLike<Node>).filter((node): node is Element => node.nodeType === 1 && (node as Element).namespaceURI === namespace && (node as Element).localName === name);

/**
 * The IdP of a metadata document: its entity ID, its single sign-on URL (HTTP-Redirect, else
 * HTTP-POST) and its signing certificates (`use="signing"` or no `use`). One entity only.
 */
export function readIdpMetadata(xml: string): IdpDescription {
  if (Buffer.byteLength(xml) > metadataLimitBytes) throw new SamlProblem('the metadata is larger than 100 KB');
  const root = parseXml(xml, 'the metadata').documentElement;
  let entity: Element = root;
  if (root.namespaceURI === samlMetadataNs && root.localName === 'EntitiesDescriptor') {
    const entities = childrenNamed(root, samlMetadataNs, 'EntityDescriptor').filter((candidate) => childrenNamed(candidate, samlMetadataNs, 'IDPSSODescriptor').length > 0);
    if (entities.length !== 1) throw new SamlProblem('the metadata describes several identity providers (or none): upload the one of this connection');
    entity = entities[0]!;
  }
  if (entity.namespaceURI !== samlMetadataNs || entity.localName !== 'EntityDescriptor') throw new SamlProblem('not SAML metadata (no EntityDescriptor)');
  const entityId = entity.getAttribute('entityID');
  if (!entityId) throw new SamlProblem('the metadata has no entityID');
  const idp = childrenNamed(entity, samlMetadataNs, 'IDPSSODescriptor')[0];
  if (!idp) throw new SamlProblem('the metadata describes no identity provider (no IDPSSODescriptor)');
  const services = childrenNamed(idp, samlMetadataNs, 'SingleSignOnService');
  const service = services.find((candidate) => candidate.getAttribute('Binding') === redirectBinding) ?? services.find((candidate) => candidate.getAttribute('Binding') === postBinding);
  const ssoUrl = service?.getAttribute('Location');
  if (!ssoUrl || !/^https?:\/\//.test(ssoUrl)) throw new SamlProblem('the metadata has no HTTP-Redirect or HTTP-POST SingleSignOnService');
  const certificates: string[] = [];
  for (const descriptor of childrenNamed(idp, samlMetadataNs, 'KeyDescriptor')) {
    const use = descriptor.getAttribute('use');
    if (use && use !== 'signing') continue;
    for (const keyInfo of childrenNamed(descriptor, xmlDsigNs, 'KeyInfo')) {
      for (const data of childrenNamed(keyInfo, xmlDsigNs, 'X509Data')) {
        for (const certificate of childrenNamed(data, xmlDsigNs, 'X509Certificate')) certificates.push(certificateFacts(certificate.textContent ?? '').pem);
      }
    }
  }
  if (certificates.length === 0) throw new SamlProblem('the metadata has no signing certificate');
  return { entityId, ssoUrl, certificates: [...new Set(certificates)] };
}

/** The metadata at a URL, through the address guard of OIDC discovery (https, no private address unless allowed), at most 100 KB. */
export async function fetchIdpMetadata(url: string, allowPrivate: boolean): Promise<{ xml: string; idp: IdpDescription }> {
  let response: Response;
  try {
    response = await guardedFetch(allowPrivate)(url, { method: 'GET', headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' }, signal: AbortSignal.timeout(timeoutMs) } as never);
  } catch (error) {
    if (error instanceof OidcProblem) throw new SamlProblem(error.message);
    throw new SamlProblem(`the metadata could not be fetched: ${(error as Error).message}`);
  }
  if (!response.ok) throw new SamlProblem(`the metadata URL answered ${response.status}`);
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > metadataLimitBytes) throw new SamlProblem('the metadata is larger than 100 KB');
  const xml = await readAtMost(response, metadataLimitBytes);
  return { xml, idp: readIdpMetadata(xml) };
}

async function readAtMost(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new SamlProblem('the metadata is larger than 100 KB');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The SP's key pair of a new connection: RSA 2048 from WebCrypto and a self-signed certificate for
 * ten years (Node reads certificates but cannot make one: @peculiar/x509). It signs AuthnRequests
 * and is the key IdPs encrypt assertions to.
 */
export async function makeServiceProviderKeys(commonName: string): Promise<{ privateKey: string; certificate: string }> {
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16))).toString('hex').replace(/^[89a-f]/, '1'),
    name: `CN=${commonName.replace(/[,=+<>#;"\\]/g, ' ').slice(0, 64)}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 10 * 365 * 24 * 60 * 60 * 1000),
    signingAlgorithm: algorithm,
    keys,
    extensions: [new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true)],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  return { privateKey: `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`, certificate: certificate.toString('pem') };
}

/**
 * node-saml's InResponseTo cache for one request: it knows only the AuthnRequest ID of the flow
 * the RelayState used up (authstrap_sso_flow.samlRequestId), so an answer to any other request,
 * on any instance, is refused. Starting, it hands the new ID to `saved`.
 */
function flowCache(expected: { requestId: string; createdAt: Date } | null, saved?: (id: string) => void): NodeSaml.CacheProvider {
  return {
    saveAsync: async (key, value) => {
      saved?.(key);
      return { value, createdAt: Date.now() };
    },
    getAsync: async (key) => (expected && key === expected.requestId ? expected.createdAt.toISOString() : null),
    removeAsync: async (key) => key,
  };
}

async function serviceProvider(settings: SamlSettings, cache: NodeSaml.CacheProvider): Promise<NodeSaml.SAML> {
  const { SAML, ValidateInResponseTo } = await loadSaml();
  return new SAML({
    issuer: settings.spEntityId,
    callbackUrl: settings.acsUrl,
    entryPoint: settings.idpSsoUrl,
    idpCert: settings.idpCertificates.length > 0 ? settings.idpCertificates : ['-'],
    idpIssuer: settings.idpEntityId,
    audience: settings.spEntityId,
    wantAssertionsSigned: true,
    // A signed response is verified when present; the assertion's own signature is what counts.
    wantAuthnResponseSigned: false,
    acceptedClockSkewMs: settings.clockSkewSeconds * 1000,
    maxAssertionAgeMs: 5 * 60 * 1000,
    validateInResponseTo: settings.allowIdpInitiated ? ValidateInResponseTo.ifPresent : ValidateInResponseTo.always,
    requestIdExpirationPeriodMs: 10 * 60 * 1000,
    cacheProvider: cache,
    decryptionPvk: settings.spPrivateKey,
    ...(settings.signAuthnRequests ? { privateKey: settings.spPrivateKey, signatureAlgorithm: 'sha256' as const, digestAlgorithm: 'sha256' } : {}),
    // The IdP picks the NameID format; nor is an authentication context asked for.
    identifierFormat: null,
    disableRequestedAuthnContext: true,
  });
}

/** The SP's metadata: entity ID, ACS (HTTP-POST), its certificate for encryption (and signing, when it signs its AuthnRequests). */
export async function serviceProviderMetadata(settings: Pick<SamlSettings, 'spEntityId' | 'acsUrl' | 'spCertificate' | 'spPrivateKey' | 'signAuthnRequests'>): Promise<string> {
  const { generateServiceProviderMetadata } = await loadSaml();
  return generateServiceProviderMetadata({
    issuer: settings.spEntityId,
    callbackUrl: settings.acsUrl,
    // node-saml lists a certificate only beside its key (which it does not publish: signMetadata is
    // off); the signing one also says AuthnRequestsSigned, so only when they are.
    ...(settings.signAuthnRequests ? { publicCerts: settings.spCertificate, privateKey: settings.spPrivateKey } : {}),
    decryptionCert: settings.spCertificate,
    decryptionPvk: settings.spPrivateKey,
    identifierFormat: null,
    wantAssertionsSigned: true,
  });
}

/** The IdP's URL for an AuthnRequest (HTTP-Redirect; signed when the connection says so) and the request's ID. */
export async function authnRequestUrl(settings: SamlSettings, relayState: string): Promise<{ url: string; requestId: string }> {
  let requestId: string | undefined;
  const sp = await serviceProvider(settings, flowCache(null, (id) => (requestId = id)));
  const url = await sp.getAuthorizeUrlAsync(relayState, undefined, {});
  if (!requestId) throw new SamlProblem('node-saml made no request ID');
  return { url, requestId };
}

/** What the ACS keeps of a verified response. */
export interface VerifiedAssertion {
  /** The NameID and the attributes, as claims for the connection's mapping (sign-in.ts profileOf). */
  claims: Record<string, unknown>;
  assertionId: string;
  /** When the replay table may forget the ID: the assertion's NotOnOrAfter + skew, at most 24 hours away. */
  rememberUntil: Date;
  inResponseTo: string | null;
}

type Parsed = Record<string, unknown> & { $?: Record<string, string>; _?: string };
const first = (value: unknown): Parsed | undefined => (Array.isArray(value) ? (value[0] as Parsed) : undefined);
const textOf = (value: unknown): string | undefined => {
  const node = Array.isArray(value) ? value[0] : value;
  return typeof node === 'string' ? node : typeof (node as Parsed | undefined)?._ === 'string' ? (node as Parsed)._ : undefined;
};

/**
 * A response at the ACS, after the algorithm policy (saml-policy.ts): node-saml verifies the
 * signature of the assertion (with the connection's certificates only: a certificate in KeyInfo is
 * ignored), decrypts it, checks its times, audience and InResponseTo against the flow's request
 * (`expected`; null: IdP-initiated). Then, on the signed assertion node-saml returns, what it
 * leaves: the issuer is the IdP's entity ID, a bearer confirmation is for this ACS and not expired,
 * and the assertion has an ID and an end (the replay table needs both).
 */
export async function verifyResponse(settings: SamlSettings, samlResponse: string, expected: { requestId: string; createdAt: Date } | null): Promise<VerifiedAssertion> {
  const sp = await serviceProvider(settings, flowCache(expected));
  let profile: NodeSaml.Profile | null;
  try {
    ({ profile } = await sp.validatePostResponseAsync({ SAMLResponse: samlResponse }));
  } catch (error) {
    throw new SamlProblem((error as Error).message);
  }
  if (!profile) throw new SamlProblem('the response holds no assertion');
  const assertion = (profile.getAssertion?.() as { Assertion?: Parsed } | undefined)?.Assertion;
  if (!assertion) throw new SamlProblem('the response holds no assertion');
  const assertionId = assertion.$?.ID;
  if (!assertionId) throw new SamlProblem('the assertion has no ID');
  if (textOf(assertion.Issuer) !== settings.idpEntityId) throw new SamlProblem(`the assertion's issuer is not ${settings.idpEntityId}`);
  const now = Date.now();
  const skewMs = settings.clockSkewSeconds * 1000;
  const confirmations = ((first(assertion.Subject)?.SubjectConfirmation as Parsed[] | undefined) ?? []).filter((confirmation) => confirmation.$?.Method === 'urn:oasis:names:tc:SAML:2.0:cm:bearer');
  const data = confirmations.map((confirmation) => first(confirmation.SubjectConfirmationData)?.$ ?? {});
  const forUs = data.filter((attributes) => attributes.Recipient === settings.acsUrl);
  if (forUs.length === 0) throw new SamlProblem('no bearer confirmation of the assertion is for this ACS (Recipient)');
  const live = forUs.filter((attributes) => attributes.NotOnOrAfter && Date.parse(attributes.NotOnOrAfter) + skewMs > now);
  if (live.length === 0) throw new SamlProblem('the assertion has no NotOnOrAfter, or it has passed');
  const inResponseTo = (profile.inResponseTo as string | undefined) ?? null;
  if (live.some((attributes) => attributes.InResponseTo !== undefined && attributes.InResponseTo !== (inResponseTo ?? expected?.requestId))) {
    throw new SamlProblem("the assertion answers another request than the response's");
  }
  const ends = Math.max(...live.map((attributes) => Date.parse(attributes.NotOnOrAfter!)));
  const claims: Record<string, unknown> = { ...((profile.attributes as Record<string, unknown> | undefined) ?? {}), nameID: profile.nameID, nameIDFormat: profile.nameIDFormat };
  return { claims, assertionId, rememberUntil: new Date(Math.min(ends + skewMs, now + 24 * 60 * 60 * 1000)), inResponseTo };
}
