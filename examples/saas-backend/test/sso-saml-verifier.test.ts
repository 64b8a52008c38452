import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResponsePolicy, decodeSamlResponse } from '../src/sso/saml-policy.js';
import { createSamlVerifier, type ExpectedRequest } from '../src/sso/saml-verifier.js';
import { authnRequestUrl, makeServiceProviderKeys, readIdpMetadata, SamlProblem, serviceProviderMetadata, verifyResponse, type SamlSettings } from '../src/sso/saml.js';
import { formOf, startSamlIdp, type TestSamlIdp } from './support/saml-idp.js';

/**
 * The ACS's XML checks on worker threads (src/sso/saml-verifier.ts), against real responses of the
 * tests' pysaml2 IdP: the same answers as the checks made on the main thread, and made while the
 * main thread does something else. (Every refusal of sso-saml.test.ts goes through the threads too.)
 */

describe('SAML responses checked on worker threads', () => {
  let idp: TestSamlIdp;
  let settings: SamlSettings;

  /** A signed response of the IdP to an AuthnRequest of ours: its XML and the request it answers. */
  const response = async (nameId: string): Promise<{ xml: string; expected: ExpectedRequest }> => {
    await idp.next({ user: { nameId, email: nameId } });
    const { url, requestId } = await authnRequestUrl(settings, 'relay-state');
    const form = formOf(await (await fetch(url)).text());
    return { xml: decodeSamlResponse(form.SAMLResponse), expected: { requestId, createdAt: new Date() } };
  };

  /** What the ACS answered before the threads: the policy, then node-saml, on this thread. */
  const checkedHere = async (xml: string, expected: ExpectedRequest) => {
    await checkResponsePolicy(xml, settings.acsUrl, settings.spPrivateKey);
    return verifyResponse(settings, Buffer.from(xml).toString('base64'), expected);
  };

  beforeAll(async () => {
    idp = await startSamlIdp();
    const base = 'http://127.0.0.1:9/api/auth/sso/verifier-test/saml';
    const keys = await makeServiceProviderKeys('verifier test');
    const described = readIdpMetadata(await (await fetch(idp.metadataUrl())).text());
    settings = {
      spEntityId: `${base}/metadata`,
      acsUrl: `${base}/acs`,
      spPrivateKey: keys.privateKey,
      spCertificate: keys.certificate,
      idpEntityId: described.entityId,
      idpSsoUrl: described.ssoUrl,
      idpCertificates: described.certificates,
      signAuthnRequests: false,
      allowIdpInitiated: false,
      clockSkewSeconds: 60,
    };
    await idp.registerServiceProvider(await serviceProviderMetadata(settings));
  });
  afterAll(() => idp?.close());

  it('answers as the checks on the main thread do: the verified assertion, or the same SamlProblem', async () => {
    const verifier = createSamlVerifier({ threads: 2 });
    try {
      const signed = await response('ada@verifier.example');
      const here = await checkedHere(signed.xml, signed.expected);
      expect(here.claims.nameID).toBe('ada@verifier.example');
      await expect(verifier.verify(settings, signed.xml, signed.expected)).resolves.toEqual(here);

      // The subject (NameID and address) changed after signing: the signature no longer holds.
      const forged = signed.xml.replaceAll('ada@verifier.example', 'eve@verifier.example');
      expect(forged).not.toBe(signed.xml);
      const refusal = await checkedHere(forged, signed.expected).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(SamlProblem);
      const fromThread = await verifier.verify(settings, forged, signed.expected).catch((error: unknown) => error);
      expect(fromThread).toBeInstanceOf(SamlProblem);
      expect((fromThread as SamlProblem).message).toBe((refusal as SamlProblem).message);

      // The algorithm policy's refusals come back the same way.
      await expect(verifier.verify(settings, `<!DOCTYPE x>${signed.xml}`, signed.expected)).rejects.toThrow(new SamlProblem('the response has a DOCTYPE: refused'));
      // Another flow's request: node-saml's InResponseTo check, on the thread.
      await expect(verifier.verify(settings, signed.xml, { requestId: '_another', createdAt: new Date() })).rejects.toBeInstanceOf(SamlProblem);
    } finally {
      await verifier.close();
    }
  });

  it('checks responses while the main thread is busy: their answers are waiting when it is free again', async () => {
    const verifier = createSamlVerifier({ threads: 1 });
    try {
      const signed = await response('grace@verifier.example');
      // The thread started and warmed up.
      await verifier.verify(settings, signed.xml, signed.expected);
      const checks = Array.from({ length: 20 }, () => verifier.verify(settings, signed.xml, signed.expected));
      // Two seconds of this thread's own work, against about 5 ms of XML a response on an idle core.
      const busyUntil = performance.now() + 2000;
      while (performance.now() < busyUntil);
      const freeAt = performance.now();
      const answers = await Promise.all(checks);
      const waitedMs = performance.now() - freeAt;
      expect(answers.every((answer) => answer.claims.nameID === 'grace@verifier.example')).toBe(true);
      // The same twenty checked on this thread, one after another: what that wait would have been
      // without the worker. From the worker only their messages are left to read: at most 40 ms,
      // or a quarter of the twenty's time here when a loaded machine makes both slower.
      const startedHere = performance.now();
      for (let check = 0; check < 20; check++) await checkedHere(signed.xml, signed.expected);
      const twentyHereMs = performance.now() - startedHere;
      expect(waitedMs, `the twenty checked here: ${twentyHereMs.toFixed(0)} ms`).toBeLessThan(Math.max(40, twentyHereMs / 4));
    } finally {
      await verifier.close();
    }
  });

  it('fails the responses still on a thread when it is closed, and checks none after', async () => {
    const verifier = createSamlVerifier({ threads: 1 });
    const signed = await response('hedy@verifier.example');
    await verifier.verify(settings, signed.xml, signed.expected);
    const inHand = Array.from({ length: 20 }, () => verifier.verify(settings, signed.xml, signed.expected));
    await verifier.close();
    // Every one settled; the last could not have been checked yet (the first might have been, just before the close).
    const settled = await Promise.allSettled(inHand);
    expect(settled.at(-1)).toMatchObject({ status: 'rejected', reason: { message: expect.stringMatching(/exited/) } });
    await expect(verifier.verify(settings, signed.xml, signed.expected)).rejects.toThrow('the SAML verifier is closed');
  });
});
