import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { DomainClaimInput, domainsPerOrganization } from './domains.router.js';

// Unnamed, as the webhook endpoints' answers (events/openapi.ts): not a generated collection for `authstrap verify`.
const Domain = z.object({
  id: z.uuid(),
  domain: z.string().meta({ description: 'Lowercase ASCII (an internationalised domain in its xn-- form)' }),
  state: z.enum(['pending', 'verified', 'failing', 'lapsed']).meta({
    description: 'pending: the record is not found yet; verified: the organization owns it; failing: the record is gone, it still counts until lapsesAt; lapsed: it no longer counts',
  }),
  txtRecord: z.object({
    type: z.literal('TXT'),
    name: z.string().meta({ description: '_authstrap-verification.<domain>' }),
    value: z.string().meta({ description: 'authstrap-domain-verification=<token>' }),
  }).meta({ description: 'The DNS record that proves the claim: publish it at your DNS provider, and keep it' }),
  verifiedAt: z.date().nullable(),
  lastCheckedAt: z.date().nullable(),
  failingSince: z.date().nullable(),
  lapsesAt: z.date().nullable().meta({ description: 'A failing domain: when it lapses unless the record is back (DOMAIN_FAILING_GRACE_DAYS)' }),
  lastCheckError: z.string().nullable().meta({ description: "The last check's finding when it was not the record: record not found, DNS timeout, another organization verified this domain, ..." }),
  nextCheckAt: z.date().nullable().meta({ description: 'When the backend checks again on its own; null: a claim pending for more than 72 hours, checked only by POST /domains/{id}/verify' }),
  createdBy: z.uuid().nullable(),
  createdAt: z.date(),
  updatedAt: z.date(),
});

/** The verified domains' routes (domains.router.ts). */
export function registerDomainRoutes(registry: OpenAPIRegistry): void {
  const tags = ['domains'];
  const tenant = z.object({ 'x-organization-id': z.uuid().optional() });
  const id = z.object({ id: z.uuid() });
  const one = (item: z.ZodType) => ({ content: { 'application/json': { schema: z.object({ success: z.literal(true), data: item }) } } });
  const adminOnly = { 401: { description: 'Not signed in' }, 403: { description: 'Not an owner or admin of the organization (or a machine key, or the service key)' } };
  const noSuch = { 404: { description: 'No such domain in this organization' } };
  registry.registerPath({
    method: 'get', path: '/domains', operationId: 'listDomains', tags,
    summary: "The organization's domain claims, each with its TXT record and state (owners and admins)",
    request: { headers: tenant },
    responses: { 200: { description: 'Domains, oldest claim first', ...one(z.array(Domain)) }, ...adminOnly },
  });
  registry.registerPath({
    method: 'post', path: '/domains', operationId: 'claimDomain', tags,
    summary: 'Claim a domain: pending until the TXT record in the answer is published and found',
    description: `Exact domains only (a subdomain is a claim of its own). Several organizations may claim a domain; the first to prove it owns it. At most ${domainsPerOrganization} claims per organization.`,
    request: { headers: tenant, body: { content: { 'application/json': { schema: DomainClaimInput } } } },
    responses: {
      201: { description: 'Claimed (state pending)', ...one(Domain) },
      ...adminOnly,
      409: { description: 'CONFLICT: claimed by this organization already; LIMIT_REACHED: too many claims' },
      422: { description: 'Not a domain: details.domain says why (an IP address, a single label, a URL, ...)' },
    },
  });
  registry.registerPath({
    method: 'post', path: '/domains/{id}/verify', operationId: 'verifyDomain', tags,
    summary: 'Check the TXT record now: the new state, or the same one with lastCheckError (a record not found is no HTTP error)',
    description: 'A DNS timeout or server failure is no finding: the state stays as it was, lastCheckError says so.',
    request: { headers: tenant, params: id },
    responses: { 200: { description: 'Checked', ...one(Domain) }, ...adminOnly, ...noSuch, 409: { description: 'DOMAIN_TAKEN: another organization holds this domain verified' } },
  });
  registry.registerPath({
    method: 'delete', path: '/domains/{id}', operationId: 'removeDomain', tags,
    summary: 'Remove a domain claim (its record can go too)',
    request: { headers: tenant, params: id },
    responses: { 204: { description: 'Removed' }, ...adminOnly, ...noSuch, 409: { description: "LAST_VERIFIED_DOMAIN: the organization requires single sign-on and this is its last verified domain" } },
  });
}
