/**
 * The entities an organization's machine keys may reach: what their permissions may name (none
 * without auth). A file of its own, so that src/auth/machine-keys.ts reads it without importing
 * every generated route (which import the auth engine's types back).
 */
export const keyEntities: readonly string[] = ['Project', 'Task'];
