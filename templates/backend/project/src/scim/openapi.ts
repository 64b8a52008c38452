import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ScimDirectoryInput, ScimDirectoryUpdate, ScimRoleMappings, ScimTokenRotation } from './directories.router.js';

/**
 * SCIM in the OpenAPI document: the routes an organization's owners and admins manage their
 * directories with (the house envelope), and the SCIM service itself (`/scim/v2/{directoryId}`,
 * SCIM's own JSON and errors; RFC 7644 is its full description).
 */

const ScimToken = z.object({ id: z.uuid(), start: z.string().meta({ description: 'The first characters, to recognise it by' }), expiresAt: z.date().nullable(), lastUsedAt: z.date().nullable(), createdAt: z.date() });
// Unnamed, as the webhook endpoints': not a generated collection for `authstrap verify`.
const ScimDirectory = z.object({
  id: z.uuid(),
  name: z.string(),
  preset: z.enum(['okta', 'entra', 'google', 'generic']),
  defaultRole: z.enum(['member', 'admin']),
  enabled: z.boolean(),
  lastRequestAt: z.date().nullable(),
  createdAt: z.date(),
  updatedAt: z.date(),
  baseUrl: z.string().meta({ description: 'The SCIM base URL to give the identity provider' }),
  tokens: z.array(ScimToken).meta({ description: 'The tokens that work now (never the tokens themselves)' }),
});
const ScimDirectoryUser = z.object({
  id: z.uuid(),
  userId: z.uuid(),
  userName: z.string(),
  externalId: z.string().nullable(),
  email: z.string(),
  displayName: z.string().nullable(),
  active: z.boolean(),
  membership: z.enum(['member', 'suspended', 'invited']),
  createdAt: z.date(),
  updatedAt: z.date(),
});

const ScimDirectoryGroup = z.object({
  id: z.uuid(),
  displayName: z.string(),
  externalId: z.string().nullable(),
  role: z.enum(['owner', 'admin', 'member']).nullable().meta({ description: 'The role its mapping gives (null: none)' }),
  members: z.int(),
  createdAt: z.date(),
  updatedAt: z.date(),
});
const ScimRoleMapping = z.object({ groupId: z.uuid(), displayName: z.string(), role: z.enum(['owner', 'admin', 'member']) });

export function registerScimRoutes(registry: OpenAPIRegistry): void {
  const one = (item: z.ZodType) => ({ content: { 'application/json': { schema: z.object({ success: z.literal(true), data: item }) } } });
  const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
  const tenant = z.object({ 'x-organization-id': z.uuid().optional() });
  const adminOnly = { 401: { description: 'Not signed in' }, 403: { description: 'Not an owner or admin of the organization (or a key)' } };
  const missing = { 404: { description: 'No such directory in this organization' } };
  const id = z.object({ id: z.uuid() });
  const tags = ['scim'];
  const withToken = ScimDirectory.extend({ token: z.string().meta({ description: 'scim_...: shown once' }) });

  registry.registerPath({ method: 'get', path: '/scim-directories', operationId: 'listScimDirectories', tags, summary: "The organization's SCIM directories and their tokens (never the tokens themselves)", request: { headers: tenant }, responses: { 200: { description: 'Directories', ...one(z.array(ScimDirectory)) }, ...adminOnly } });
  registry.registerPath({ method: 'post', path: '/scim-directories', operationId: 'createScimDirectory', tags, summary: 'Connect an identity provider: its SCIM base URL, and its first token, in this answer only', request: { headers: tenant, body: json(ScimDirectoryInput) }, responses: { 201: { description: 'Connected', ...one(withToken) }, ...adminOnly, 409: { description: 'A directory of this name exists' }, 422: { description: 'Invalid input (details name the field)' } } });
  registry.registerPath({ method: 'get', path: '/scim-directories/{id}', operationId: 'getScimDirectory', tags, summary: 'One directory', request: { headers: tenant, params: id }, responses: { 200: { description: 'The directory', ...one(ScimDirectory) }, ...adminOnly, ...missing } });
  registry.registerPath({ method: 'patch', path: '/scim-directories/{id}', operationId: 'updateScimDirectory', tags, summary: 'Rename it, change its default role, or turn it off (its tokens then answer 401) and on', request: { headers: tenant, params: id, body: json(ScimDirectoryUpdate) }, responses: { 200: { description: 'Changed', ...one(ScimDirectory) }, ...adminOnly, ...missing } });
  registry.registerPath({ method: 'delete', path: '/scim-directories/{id}', operationId: 'deleteScimDirectory', tags, summary: 'Disconnect it: memberships stay as they are, suspended ones become removable by hand', request: { headers: tenant, params: id }, responses: { 204: { description: 'Removed' }, ...adminOnly, ...missing } });
  registry.registerPath({ method: 'post', path: '/scim-directories/{id}/tokens', operationId: 'rotateScimToken', tags, summary: 'A new token, shown once; the current one keeps working for overlapSeconds (default a day)', request: { headers: tenant, params: id, body: json(ScimTokenRotation) }, responses: { 201: { description: 'Rotated', ...one(z.object({ id: z.uuid(), start: z.string(), previousExpiresAt: z.date().nullable(), token: z.string() })) }, ...adminOnly, ...missing } });
  registry.registerPath({ method: 'delete', path: '/scim-directories/{id}/tokens/{tokenId}', operationId: 'revokeScimToken', tags, summary: 'Revoke a token: its next request is a 401', request: { headers: tenant, params: z.object({ id: z.uuid(), tokenId: z.uuid() }) }, responses: { 204: { description: 'Revoked' }, ...adminOnly, 404: { description: 'No such directory or token' } } });
  registry.registerPath({ method: 'get', path: '/scim-directories/{id}/groups', operationId: 'listScimDirectoryGroups', tags, summary: 'The groups the directory pushed, with their member counts and the role mapped to each', request: { headers: tenant, params: id }, responses: { 200: { description: 'Groups', ...one(z.array(ScimDirectoryGroup)) }, ...adminOnly, ...missing } });
  const ScimRequest = z.object({ id: z.uuid(), method: z.string(), path: z.string().meta({ description: 'Without its query (a filter holds addresses)' }), status: z.int(), scimType: z.string().nullable(), detail: z.string().nullable(), durationMs: z.int(), createdAt: z.date() });
  registry.registerPath({ method: 'get', path: '/scim-directories/{id}/requests', operationId: 'listScimRequests', tags, summary: 'The last 200 requests the directory made and what they were answered, newest first (kept 7 days, at most 1,000)', request: { headers: tenant, params: id }, responses: { 200: { description: 'Requests', ...one(z.array(ScimRequest)) }, ...adminOnly, ...missing } });
  registry.registerPath({ method: 'get', path: '/scim-directories/{id}/role-mappings', operationId: 'listScimRoleMappings', tags, summary: 'Which directory group gives which role', request: { headers: tenant, params: id }, responses: { 200: { description: 'Mappings', ...one(z.array(ScimRoleMapping)) }, ...adminOnly, ...missing } });
  registry.registerPath({ method: 'put', path: '/scim-directories/{id}/role-mappings', operationId: 'replaceScimRoleMappings', tags, summary: "Replace the mappings whole; the provisioned members' roles are recomputed at once (the most privileged mapped role wins, else the default role; no mappings: roles are left as they are)", request: { headers: tenant, params: id, body: json(ScimRoleMappings) }, responses: { 200: { description: 'The mappings now', ...one(z.array(ScimRoleMapping)) }, ...adminOnly, ...missing, 409: { description: 'LAST_OWNER: the organization would be left without an owner' }, 422: { description: 'A group that is not the directory’s, or mapped twice' } } });
  const ManagedMember = z.object({
    userId: z.uuid(),
    directoryId: z.uuid(),
    directoryName: z.string(),
    rolesFromGroups: z.boolean().meta({ description: 'The directory maps groups to roles: their role, and their removal, are its' }),
    profileFromDirectory: z.boolean().meta({ description: 'Their address is in a verified domain: their name and address are the directory’s' }),
  });
  registry.registerPath({ method: 'get', path: '/scim-directories/managed-members', operationId: 'listScimManagedMembers', tags, summary: 'Which of the given users (userId, up to 100) a directory provisioned as members, and what it owns of them', request: { headers: tenant, query: z.object({ userId: z.union([z.uuid(), z.array(z.uuid())]).optional() }) }, responses: { 200: { description: 'The provisioned ones', ...one(z.array(ManagedMember)) }, ...adminOnly, 422: { description: 'More than 100, or not a uuid' } } });
  registry.registerPath({ method: 'get', path: '/scim-directories/{id}/users', operationId: 'listScimDirectoryUsers', tags, summary: 'The users the directory provisioned, with their membership (member, suspended, invited)', request: { headers: tenant, params: id }, responses: { 200: { description: 'Users', ...one(z.array(ScimDirectoryUser)) }, ...adminOnly, ...missing } });
}
