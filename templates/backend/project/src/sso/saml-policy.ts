import { parseXml, SamlProblem } from './saml.js';

/**
 * The ACS's algorithm policy (docs/enterprise-identity.md, 4.2): what a SAML response must not be
 * before node-saml verifies it. This is not signature checking (node-saml and xml-crypto do that);
 * it refuses what they would accept by default and we do not: SHA-1 and HMAC (xml-crypto accepts
 * both), a DOCTYPE, several assertions (the shape of most signature-wrapping attacks), a signature
 * over several references, a response for another ACS, and a body too large to be an honest one.
 */

export const responseLimitBytes = 256 * 1024;

const protocolNs = 'urn:oasis:names:tc:SAML:2.0:protocol';
const assertionNs = 'urn:oasis:names:tc:SAML:2.0:assertion';
const xmlDsigNs = 'http://www.w3.org/2000/09/xmldsig#';

/** Signature and digest algorithms accepted: RSA and ECDSA over SHA-2 (the RSA-PSS ones of xmldsig-more too). */
const acceptedSignatureMethods = new Set([
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256',
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384',
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512',
]);
const acceptedDigestMethods = new Set(['http://www.w3.org/2001/04/xmlenc#sha256', 'http://www.w3.org/2001/04/xmldsig-more#sha384', 'http://www.w3.org/2001/04/xmlenc#sha512']);

const elements = (document: Document, namespace: string, name: string): Element[] => Array.from(document.getElementsByTagNameNS(namespace, name) as unknown as ArrayLike<Element>);

/** The form's `SAMLResponse`: base64 of at most 256 KB of XML. Refused: a SamlProblem saying why. */
export function decodeSamlResponse(field: unknown): string {
  if (typeof field !== 'string' || field.length === 0) throw new SamlProblem('no SAMLResponse in the form');
  const compact = field.replace(/\s+/g, '');
  if (compact.length > Math.ceil((responseLimitBytes * 4) / 3) + 4) throw new SamlProblem('the response is larger than 256 KB');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(compact) || compact.length % 4 !== 0) throw new SamlProblem('SAMLResponse is not base64');
  return Buffer.from(compact, 'base64').toString('utf8');
}

/**
 * Refuses a response the policy does not accept; says nothing of its signature's validity. An
 * encrypted assertion's signature is inside the encryption: it is decrypted (with node-saml's own
 * function and the SP key) and held to the same algorithms before node-saml verifies it.
 */
export async function checkResponsePolicy(xml: string, acsUrl: string, spPrivateKey: string): Promise<void> {
  if (Buffer.byteLength(xml) > responseLimitBytes) throw new SamlProblem('the response is larger than 256 KB');
  const document = parseXml(xml, 'the response');
  const root = document.documentElement;
  if (root.namespaceURI !== protocolNs || root.localName !== 'Response') throw new SamlProblem('not a SAML Response');
  const destination = root.getAttribute('Destination');
  if (destination && destination !== acsUrl) throw new SamlProblem('the response is for another destination than this ACS');
  const encrypted = elements(document, assertionNs, 'EncryptedAssertion');
  if (elements(document, assertionNs, 'Assertion').length + encrypted.length > 1) throw new SamlProblem('the response holds more than one assertion');
  checkSignatures(document);
  if (encrypted.length === 1) {
    const { decryptXml } = await import('@node-saml/node-saml/lib/xml.js');
    let assertion: string;
    try {
      assertion = await decryptXml(encrypted[0]!.toString(), spPrivateKey);
    } catch {
      throw new SamlProblem('the encrypted assertion could not be decrypted with the SP key');
    }
    checkSignatures(parseXml(assertion, 'the decrypted assertion'));
  }
}

/** One reference per signature, SHA-2 signature and digest algorithms. */
function checkSignatures(document: Document): void {
  for (const signature of elements(document, xmlDsigNs, 'Signature')) {
    const signedInfo = Array.from(signature.childNodes as unknown as ArrayLike<Node>).filter((node): node is Element => node.nodeType === 1 && (node as Element).localName === 'SignedInfo');
    if (signedInfo.length !== 1) throw new SamlProblem('a signature without one SignedInfo');
    const references = elements(document, xmlDsigNs, 'Reference').filter((reference) => reference.parentNode === signedInfo[0]);
    if (references.length !== 1) throw new SamlProblem('a signature over several references (or none)');
  }
  for (const method of elements(document, xmlDsigNs, 'SignatureMethod')) {
    const algorithm = method.getAttribute('Algorithm') ?? '';
    if (!acceptedSignatureMethods.has(algorithm)) throw new SamlProblem(`signature algorithm ${algorithm || '(none)'} refused: SHA-256 or stronger, RSA or ECDSA`);
  }
  for (const method of elements(document, xmlDsigNs, 'DigestMethod')) {
    const algorithm = method.getAttribute('Algorithm') ?? '';
    // An EncryptedKey's OAEP digest is xmldsig's too: SHA-1 there is OAEP's mask, not a signature's digest.
    if (method.parentNode && (method.parentNode as Element).localName === 'EncryptionMethod') continue;
    if (!acceptedDigestMethods.has(algorithm)) throw new SamlProblem(`digest algorithm ${algorithm || '(none)'} refused: SHA-256 or stronger`);
  }
}
