import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The tests' SAML identity provider: test/support/saml-idp.py (pysaml2 signing with xmlsec1, another
 * XML stack than the backend's node-saml and xml-crypto), run with Debian's /usr/bin/python3 on a
 * free loopback port. See the script for its routes and the options of a response.
 */

export interface SamlUser {
  nameId: string;
  email?: string;
  name?: string;
}

export interface ResponseOptions {
  user: SamlUser;
  key?: 'a' | 'b' | 'evil';
  signAssertion?: boolean;
  signResponse?: boolean;
  encrypt?: boolean;
  sha1?: boolean;
  audience?: string;
  destination?: string;
  expired?: boolean;
  inResponseTo?: string;
  issuer?: string;
}

/** The auto-submitting form an IdP answers with: where it posts and what. */
export interface PostedForm {
  action: string;
  SAMLResponse: string;
  RelayState: string | undefined;
}

export interface TestSamlIdp {
  url: string;
  /** Its metadata's URL, listing the signing certificates of `keys`. */
  metadataUrl(keys?: ('a' | 'b')[]): string;
  registerServiceProvider(metadataXml: string): Promise<void>;
  /** The options of the next response (used once). */
  next(options: ResponseOptions): Promise<void>;
  /** The last AuthnRequest the IdP parsed. */
  lastRequest(): Promise<{ id: string; issuer: string; acs: string; signed: boolean }>;
  /** An unsolicited response for the SP of `spEntityId`. */
  idpInitiated(spEntityId: string, options: ResponseOptions): Promise<PostedForm>;
  close(): Promise<void>;
}

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'saml-idp.py');

/** The form of an IdP's page; its failure message when it has none. */
export function formOf(page: string): PostedForm {
  const field = (name: string) => page.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1];
  const action = page.match(/<form method="post" action="([^"]+)"/)?.[1];
  const SAMLResponse = field('SAMLResponse');
  if (!action || !SAMLResponse) throw new Error(`the IdP answered no form: ${page.slice(0, 500)}`);
  const unescape = (value: string) => value.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#x27;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');
  return { action: unescape(action), SAMLResponse, RelayState: field('RelayState') && unescape(field('RelayState')!) };
}

export async function startSamlIdp(): Promise<TestSamlIdp> {
  const child: ChildProcess = spawn('/usr/bin/python3', [script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let errors = '';
  child.stderr!.on('data', (chunk) => (errors += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the SAML IdP did not start: ${errors}`)), 30_000);
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const line = out.split('\n').find((candidate) => candidate.startsWith('{'));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      }
    });
    child.on('exit', (code) => reject(new Error(`the SAML IdP exited (${code}): ${errors}`)));
  });
  const post = async (pathname: string, body: string) => {
    const response = await fetch(`${url}${pathname}`, { method: 'POST', body });
    if (response.status !== 204) throw new Error(`IdP ${pathname}: ${response.status} ${await response.text()}`);
  };
  return {
    url,
    metadataUrl: (keys = ['a']) => `${url}/metadata?keys=${keys.join(',')}`,
    registerServiceProvider: (xml) => post('/sp', xml),
    next: (options) => post('/next', JSON.stringify(options)),
    lastRequest: async () => (await (await fetch(`${url}/last-request`)).json()) as { id: string; issuer: string; acs: string; signed: boolean },
    idpInitiated: async (sp, options) => {
      await post('/next', JSON.stringify(options));
      return formOf(await (await fetch(`${url}/idp-initiated?${new URLSearchParams({ sp })}`)).text());
    },
    close: async () => {
      if (child.exitCode === null) {
        child.kill();
        await new Promise((resolve) => child.once('exit', resolve));
      }
    },
  };
}
