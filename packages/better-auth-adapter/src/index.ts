export { authstrapAdapter, type AuthstrapAdapterOptions } from './adapter.js';
export { authstrapPassword } from './password.js';
export { AuthstrapRequestError } from './rest.js';
export { betterAuthSchema, type AuthstrapSchemaPart } from './schema.js';
export { ssoActiveOrganization } from './sso-organization.js';
