import express, { Router } from 'express';
import type { Config } from '../config.js';
import type { Database, Queryable } from '../db/database.js';
import { withScope } from '../db/scope.js';
import { HttpError } from '../http/errors.js';
import { isUuid } from '../http/validate.js';
import { certificatesOf } from './connections.router.js';
import { connectionSeal, samlSettingsOf, samlUrlsOf, type ConnectionRow } from './connections.js';
import type { FlowRow } from './flows.js';
import { decodeSamlResponse } from './saml-policy.js';
import type { SamlVerifier } from './saml-verifier.js';
import { SamlProblem, serviceProviderMetadata } from './saml.js';
import { ssoLanding } from './sign-in.router.js';
import { SsoRefusal } from './sign-in.js';

/**
 * SAML's public routes (docs/sso.md; docs/enterprise-identity.md 4.2, 5.2):
 *
 *   GET  /api/auth/sso/:connectionId/saml/metadata  the SP metadata the IdP's admin uploads
 *   POST /api/auth/sso/:connectionId/saml/acs       the IdP's response (HTTP-POST binding)
 *
 * Mounted before the CSRF guard: the ACS is posted by a form of the IdP's origin, which the
 * guard would refuse once a session cookie is present. The RelayState (and the binding cookie)
 * are what ties a response to the browser that started; its own urlencoded body limit of 512 KB.
 * The response's XML is checked on a worker thread (saml-verifier.ts), not on the event loop.
 */

const acsBodyLimit = '512kb';

export function samlRouter({ db, config, samlVerifier }: { db: Database; config: Config; samlVerifier: SamlVerifier }): Router {
  const router = Router();
  const { connectionById, connectionOf, landing, refused, signInErrorUrl, takeBrowsersFlow } = ssoLanding({ db, config });
  const seal = connectionSeal(config.authSecret);

  router.get('/:connectionId/saml/metadata', async (req, res) => {
    const connectionId = String(req.params.connectionId);
    const connection = isUuid(connectionId) ? await connectionById(connectionId) : undefined;
    if (!connection || connection.protocol !== 'saml') throw new HttpError(404, 'NOT_FOUND', 'No SAML connection with this id');
    const urls = samlUrlsOf(config.authUrl, connection.id);
    const xml = await serviceProviderMetadata({ spEntityId: urls.entityId, acsUrl: urls.acsUrl, spCertificate: connection.samlSpCertificate!, spPrivateKey: seal.open(connection.samlSpPrivateKey!), signAuthnRequests: connection.samlSignAuthnRequests });
    res.type('application/samlmetadata+xml').send(xml);
  });

  router.post('/:connectionId/saml/acs', express.urlencoded({ extended: false, limit: acsBodyLimit, parameterLimit: 10 }), async (req, res) => {
    const connectionId = String(req.params.connectionId);
    const form = (req.body ?? {}) as Record<string, unknown>;
    const fail = (code: string) => res.redirect(303, signInErrorUrl(code));
    const relayState = typeof form.RelayState === 'string' && form.RelayState !== '' ? form.RelayState : undefined;

    // SP-initiated: the RelayState is a flow's state. Without a flow, IdP-initiated, if the
    // connection allows it (an IdP's own RelayState is then ignored: the browser lands on APP_URL).
    let connection: ConnectionRow | undefined;
    let flow: FlowRow | null = null;
    const taken = relayState ? await takeBrowsersFlow(req, res, connectionId, relayState) : 'SSO_INVALID_STATE';
    if (typeof taken !== 'string') {
      flow = taken;
      connection = await connectionOf(flow.organizationId, connectionId);
    } else if (taken !== 'SSO_INVALID_STATE') {
      return fail(taken);
    } else {
      connection = isUuid(connectionId) ? await connectionById(connectionId) : undefined;
      if (connection && !connection.allowIdpInitiated) {
        req.log.warn({ connectionId }, 'SAML response without a flow refused: the connection does not allow IdP-initiated sign-in');
        return fail(relayState ? 'SSO_INVALID_STATE' : 'SSO_IDP_INITIATED_NOT_ALLOWED');
      }
    }
    if (!connection || connection.protocol !== 'saml') return fail('SSO_NOT_CONFIGURED');
    if (flow?.purpose !== 'test' && !connection.enabled) return fail('SSO_NOT_CONFIGURED');

    const certificates = await certificatesOf(withScope(db, { organizationId: connection.organizationId, userId: '', role: 'system' }), connection.id);
    const settings = samlSettingsOf(connection, certificates, seal, config);
    let verified;
    try {
      const xml = decodeSamlResponse(form.SAMLResponse);
      verified = await samlVerifier.verify(settings, xml, flow?.samlRequestId ? { requestId: flow.samlRequestId, createdAt: flow.createdAt } : null);
    } catch (error) {
      if (!(error instanceof SamlProblem)) throw error;
      return refused(req, res, connection, flow, error);
    }
    const { assertionId, rememberUntil } = verified;
    // A second use of one assertion, on any instance, makes nothing: the ID is taken in the sign-in's transaction.
    const firstUse = async (tx: Queryable) => {
      const { rows } = await tx.query(
        `INSERT INTO "authstrap_saml_assertion" ("connectionId", "assertionId", "expiresAt") VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1`,
        [connection.id, assertionId, rememberUntil],
      );
      if (rows.length === 0) throw new SsoRefusal('SSO_FAILED', `SAML assertion ${assertionId} was used already (a replay)`);
    };
    return landing(req, res, connection, flow, verified.claims, firstUse);
  });

  return router;
}
