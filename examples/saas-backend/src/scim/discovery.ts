import type { Router } from 'express';
import type { Config } from '../config.js';
import { ScimError } from './errors.js';
import { coreGroupSchema, coreUserSchema, enterpriseUserSchema } from './resource-schema.js';

/**
 * What the service says of itself (RFC 7644 section 4): ServiceProviderConfig, ResourceTypes and
 * Schemas. Identity providers read them when a connection is tested (Entra ID's "Test connection",
 * Okta's "Test API credentials"); they describe what this service really does: PATCH, filters (at
 * most 200 results a page), ETags; no bulk, no sort, no password change.
 */

const listResponse = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const maxResults = 200;

const attribute = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name,
  type,
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...extra,
});
const multiValued = (name: string, subAttributes: string[]) =>
  attribute(name, 'complex', { multiValued: true, subAttributes: subAttributes.map((sub) => attribute(sub, sub === 'primary' ? 'boolean' : 'string')) });

/** The schemas of the resources served, with the attributes this service keeps. */
const schemas = [
  {
    id: coreUserSchema,
    name: 'User',
    description: 'User Account',
    attributes: [
      attribute('userName', 'string', { required: true, uniqueness: 'server' }),
      attribute('name', 'complex', { subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((sub) => attribute(sub, 'string')) }),
      attribute('displayName', 'string'),
      attribute('nickName', 'string'),
      attribute('title', 'string'),
      attribute('userType', 'string'),
      attribute('preferredLanguage', 'string'),
      attribute('locale', 'string'),
      attribute('timezone', 'string'),
      attribute('active', 'boolean'),
      multiValued('emails', ['value', 'type', 'primary', 'display']),
      multiValued('phoneNumbers', ['value', 'type', 'primary']),
      multiValued('addresses', ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type', 'primary']),
      attribute('groups', 'complex', { multiValued: true, mutability: 'readOnly' }),
    ],
    meta: { resourceType: 'Schema', location: `/Schemas/${coreUserSchema}` },
  },
  {
    id: enterpriseUserSchema,
    name: 'EnterpriseUser',
    description: 'Enterprise User',
    attributes: ['employeeNumber', 'costCenter', 'organization', 'division', 'department'].map((name) => attribute(name, 'string')).concat([
      attribute('manager', 'complex', { subAttributes: [attribute('value', 'string'), attribute('displayName', 'string', { mutability: 'readOnly' })] }),
    ]),
    meta: { resourceType: 'Schema', location: `/Schemas/${enterpriseUserSchema}` },
  },
  {
    id: coreGroupSchema,
    name: 'Group',
    description: 'Group',
    attributes: [attribute('displayName', 'string', { required: true }), multiValued('members', ['value', 'display', 'type'])],
    meta: { resourceType: 'Schema', location: `/Schemas/${coreGroupSchema}` },
  },
];

const resourceTypes = [
  {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
    id: 'User',
    name: 'User',
    endpoint: '/Users',
    schema: coreUserSchema,
    schemaExtensions: [{ schema: enterpriseUserSchema, required: false }],
    meta: { resourceType: 'ResourceType', location: '/ResourceTypes/User' },
  },
  {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
    id: 'Group',
    name: 'Group',
    endpoint: '/Groups',
    schema: coreGroupSchema,
    meta: { resourceType: 'ResourceType', location: '/ResourceTypes/Group' },
  },
];

const list = (resources: unknown[]) => ({ schemas: [listResponse], totalResults: resources.length, startIndex: 1, itemsPerPage: resources.length, Resources: resources });

export function discoveryRoutes(router: Router, config: Config): void {
  const send = (res: import('express').Response, body: unknown) => res.type('application/scim+json').send(JSON.stringify(body));

  router.get('/ServiceProviderConfig', (req, res) => {
    send(res, {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
      documentationUri: `${config.authUrl}/api/docs`,
      patch: { supported: true },
      bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      filter: { supported: true, maxResults },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: true },
      authenticationSchemes: [
        { type: 'oauthbearertoken', name: 'OAuth Bearer Token', description: "The directory's SCIM token, made in the organization's settings", primary: true },
      ],
      meta: { resourceType: 'ServiceProviderConfig', location: `${config.authUrl}/scim/v2/${(req.params as Record<string, string>).directoryId}/ServiceProviderConfig` },
    });
  });

  router.get('/ResourceTypes', (_req, res) => send(res, list(resourceTypes)));
  router.get('/ResourceTypes/:name', (req, res) => {
    const found = resourceTypes.find((type) => type.id.toLowerCase() === String(req.params.name).toLowerCase());
    if (!found) throw new ScimError(404, undefined, `No resource type ${req.params.name}: this service has User and Group`);
    send(res, found);
  });
  router.get('/Schemas', (_req, res) => send(res, list(schemas)));
  router.get('/Schemas/:urn', (req, res) => {
    const found = schemas.find((schema) => schema.id.toLowerCase() === String(req.params.urn).toLowerCase());
    if (!found) throw new ScimError(404, undefined, `No schema ${req.params.urn}`);
    send(res, found);
  });
}
