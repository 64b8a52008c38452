import { randomBytes } from 'node:crypto';
import type { Statement } from '../db/sql.js';
import { hashMachineKey } from '../http/session-token.js';

/**
 * A directory's bearer tokens (docs/enterprise-identity.md, 2.2 and 5.3): `scim_` and 32 random
 * bytes, shown once, kept as their SHA-256 (as machine keys are) and the first characters to
 * recognise one by. The token proves one directory of one organization, on `/scim/v2/<directory>`
 * only: the auth guard of every other route does not know it (its 401).
 */

export const scimTokenPrefix = 'scim_';
/** How much of a token is kept in the clear (`start`): the prefix and five characters. */
const shownCharacters = scimTokenPrefix.length + 5;

export function newScimToken(): { token: string; tokenHash: string; start: string } {
  const token = `${scimTokenPrefix}${randomBytes(32).toString('base64url')}`;
  return { token, tokenHash: hashMachineKey(token), start: token.slice(0, shownCharacters) };
}

/** Why a token may not act on the directory its path names; `ok` when it may. */
export type ScimCallerOutcome = 'ok' | 'other-directory' | 'disabled' | 'expired';

/** What scimCallerStatement found: no row at all means no such token (never made, or revoked). */
export interface ScimCallerRow {
  directoryId: string;
  organizationId: string;
  /** The role a provisioned member gets when no group mapping gives another. */
  defaultRole: 'member' | 'admin';
  outcome: ScimCallerOutcome;
}

/**
 * Authenticates a directory's token for the directory the path names, and scopes the transaction
 * to its organization with the role `directory` (which the identity tables' policies know) only
 * when the token may act there: one statement, `authstrap.scim_caller`. `eventContext` is the JSON
 * the transaction's events carry (the directory as their actor), set by the same statement.
 */
export function scimCallerStatement(token: string, directoryId: string, eventContext: string): Statement {
  return { text: scimCallerText, params: [hashMachineKey(token), directoryId, eventContext] };
}

const scimCallerText = `SELECT c."directoryId", c."organizationId", c."defaultRole", c."outcome",
       (set_config('authstrap.organization_id', CASE WHEN c."outcome" = 'ok' THEN c."organizationId"::text ELSE '' END, true)
         || set_config('authstrap.user_id', '', true)
         || set_config('authstrap.role', CASE WHEN c."outcome" = 'ok' THEN 'directory' ELSE '' END, true)
         || set_config('authstrap.request', $3, true)) IS NOT NULL AS "scoped"
     FROM authstrap.scim_caller($1, $2::uuid) c`;
