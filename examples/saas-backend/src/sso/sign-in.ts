import { randomBytes } from 'node:crypto';
import type { Queryable } from '../db/database.js';
import { byUser, recordAuthEvent } from '../events/events.js';
import { HttpError } from '../http/errors.js';
import { hashToken } from '../http/session-token.js';
import { decideSignIn, refusedVerdictOf, type SignInVerdict } from '../auth/sign-in-policy.js';
import type { RequestMeta } from '../auth/types.js';
import type { ConnectionRow } from './connections.js';

/**
 * From an identity the provider asserted to a user, a membership and a session
 * (docs/enterprise-identity.md, 4.3), in one transaction scoped `system` to the connection's
 * organization. The only way an SSO sign-in reaches an existing account is an address in a domain
 * this organization verified, which the provider says it checked: anything else with an existing
 * account is `ACCOUNT_EXISTS` (no link, ever: account takeover).
 */

/** A refusal on the way back from the provider: the browser lands on `<APP_URL>/sign-in?error=<code>`. */
export class SsoRefusal extends Error {
  override name = 'SsoRefusal';
  constructor(
    readonly code: string,
    message: string,
    /** When the sign-in rule refused: its verdict, and who it refused (for session.sign_in_refused). */
    readonly verdict?: Extract<SignInVerdict, { allowed: false }>,
    readonly email?: string,
    readonly userId?: string,
  ) {
    super(message);
  }
}

/** The attributes sign-in reads, from the ID token's claims or the SAML assertion through the connection's mapping (10.3). */
export interface SsoProfile {
  subject: string;
  email: string;
  name: string;
  emailVerified: boolean;
  groups: string[];
  tenant: string | undefined;
}

/**
 * Where each attribute is found when the connection's mapping does not say: OIDC's standard claims;
 * for SAML the NameID and the names Okta, Entra ID, Google and the eduPerson OIDs use (the first
 * one present wins).
 */
const defaultNames = {
  oidc: { subject: ['sub'], email: ['email'], name: ['name'], givenName: ['given_name'], familyName: ['family_name'], groups: ['groups'] },
  saml: {
    subject: ['nameID'],
    email: ['email', 'mail', 'urn:oid:0.9.2342.19200300.100.1.3', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress'],
    name: ['displayName', 'name', 'urn:oid:2.16.840.1.113730.3.1.241', 'http://schemas.microsoft.com/identity/claims/displayname'],
    givenName: ['givenName', 'firstName', 'urn:oid:2.5.4.42', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname'],
    familyName: ['sn', 'surname', 'lastName', 'urn:oid:2.5.4.4', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname'],
    groups: ['groups', 'memberOf', 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups'],
  },
} as const;

export function profileOf(connection: ConnectionRow, claims: Record<string, unknown>): SsoProfile {
  const mapping = connection.attributeMapping ?? {};
  const defaults = defaultNames[connection.protocol];
  // A SAML attribute may be multi-valued: its first value.
  const one = (name: string) => {
    const value = Array.isArray(claims[name]) ? (claims[name] as unknown[])[0] : claims[name];
    return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
  };
  const read = (attribute: keyof typeof defaults) => {
    for (const name of mapping[attribute] ? [mapping[attribute]] : defaults[attribute]) {
      const value = one(name);
      if (value !== undefined) return value;
    }
    return undefined;
  };
  const subject = read('subject');
  let email = read('email');
  // Entra ID may send the address only as preferred_username; a SAML IdP often only as the NameID.
  if (!email && connection.preset === 'entra' && connection.protocol === 'oidc') email = one('preferred_username');
  if (!email && connection.protocol === 'saml' && subject?.includes('@')) email = subject;
  if (!subject) throw new SsoRefusal('SSO_PROFILE_INCOMPLETE', 'The identity provider sent no subject');
  if (!email || !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) throw new SsoRefusal('SSO_PROFILE_INCOMPLETE', 'The identity provider sent no e-mail address');
  const groupsName = mapping.groups ? [mapping.groups] : defaults.groups;
  const groups = groupsName.map((name) => claims[name]).find((value) => value !== undefined);
  return {
    subject,
    email: email.toLowerCase(),
    name: read('name') ?? ([read('givenName'), read('familyName')].filter(Boolean).join(' ') || email.split('@')[0]!),
    // SAML: the signed assertion of the organization's own IdP proves the address. OIDC: Google must
    // say true; others count as verified unless they say false (4.3).
    emailVerified: connection.protocol === 'saml' ? true : connection.preset === 'google' ? claims.email_verified === true : claims.email_verified !== false,
    groups: (Array.isArray(groups) ? groups : typeof groups === 'string' ? [groups] : []).filter((group): group is string => typeof group === 'string'),
    tenant: connection.protocol === 'oidc' ? (one('tid') ?? one('hd')) : undefined,
  };
}

const sessionLifetimeMs = 7 * 24 * 60 * 60 * 1000;

export interface SignedInBySso {
  userId: string;
  sessionId: string;
  token: string;
  created: boolean;
}

/**
 * The address of a user their organization's identity provider now asserts, in one of its
 * verified domains (4.3, 1: a renamed employee): the `User`'s address follows, proven. Only
 * there: an address outside the organization's domains is not its to hand out. Left as it is
 * when another account has that address (neither is merged; the event says nothing changed).
 */
async function followAssertedAddress(tx: Queryable, userId: string, email: string): Promise<void> {
  const { rows } = await tx.query<{ id: string }>(
    `UPDATE "User" u SET "email" = $2, "email_verified" = true, "updatedAt" = now()
      WHERE u."id" = $1 AND lower(u."email") <> lower($2)
        AND NOT EXISTS (SELECT 1 FROM "User" other WHERE lower(other."email") = lower($2) AND other."id" <> $1)
      RETURNING u."id"`,
    [userId, email],
  );
  if (rows[0]) await recordAuthEvent(tx, { type: 'user.email_changed', userId, entity: 'User', entityId: userId, data: { method: 'sso' } }, byUser(userId));
}

/**
 * Resolves the profile to a user (4.3), makes the membership, and the session with `authMethod
 * 'sso'` and the connection, whose trigger asks the rule; refused: an SsoRefusal with the verdict's
 * code. `tx` is scoped `system` to the connection's organization.
 */
export async function signInBySso(tx: Queryable, connection: ConnectionRow, profile: SsoProfile, meta: RequestMeta): Promise<SignedInBySso> {
  const organizationId = connection.organizationId;
  const { rows: owning } = await tx.query(
    `SELECT 1 FROM "authstrap_domain" WHERE "organizationId" = $1 AND "domain" = lower(substring($2 from '@([^@]*)$')) AND "state" IN ('verified', 'failing')`,
    [organizationId, profile.email],
  );
  const owned = owning.length > 0;
  const proved = profile.emailVerified && (connection.oidcTenant === null || profile.tenant === connection.oidcTenant);

  let userId: string;
  let created = false;
  const { rows: known } = await tx.query<{ userId: string }>(`SELECT "userId" FROM "authstrap_sso_identity" WHERE "connectionId" = $1 AND "subject" = $2`, [connection.id, profile.subject]);
  if (known[0]) {
    userId = known[0].userId;
    await tx.query(`UPDATE "authstrap_sso_identity" SET "email" = $3, "profile" = $4::jsonb, "lastSignInAt" = now(), "updatedAt" = now() WHERE "connectionId" = $1 AND "subject" = $2`, [
      connection.id,
      profile.subject,
      profile.email,
      JSON.stringify({ name: profile.name, groups: profile.groups }),
    ]);
    if (owned && proved) await followAssertedAddress(tx, userId, profile.email);
  } else {
    const { rows: existing } = await tx.query<{ id: string }>(`SELECT "id" FROM "User" WHERE lower("email") = $1`, [profile.email]);
    if (existing[0]) {
      if (!(owned && proved)) throw new SsoRefusal('ACCOUNT_EXISTS', 'An account with this address exists: sign in with it');
      userId = existing[0].id;
    } else {
      const { rows } = await tx.query<{ id: string }>(`INSERT INTO "User" ("email", "name", "email_verified") VALUES ($1, $2, $3) RETURNING "id"`, [
        profile.email,
        profile.name.slice(0, 200) || profile.email.split('@')[0],
        owned && proved,
      ]);
      userId = rows[0]!.id;
      created = true;
      await recordAuthEvent(tx, { type: 'user.signed_up', userId, entity: 'User', entityId: userId, data: { method: 'sso', connectionId: connection.id } }, byUser(userId));
    }
    await tx.query(
      `INSERT INTO "authstrap_sso_identity" ("organizationId", "connectionId", "userId", "subject", "email", "profile", "lastSignInAt") VALUES ($1, $2, $3, $4, $5, $6::jsonb, now())`,
      [organizationId, connection.id, userId, profile.subject, profile.email, JSON.stringify({ name: profile.name, groups: profile.groups })],
    );
  }

  const { rows: membership } = await tx.query<{ member: boolean; suspended: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM "member" WHERE "userId" = $1 AND "organizationId" = $2) AS "member", authstrap.member_suspended($1, $2) AS "suspended"`,
    [userId, organizationId],
  );
  if (membership[0]!.suspended) {
    // The rule's verdict, for the record: it names this organization and any other whose directory turned the user off.
    const verdict = await decideSignIn(tx, { email: profile.email, userId, method: 'sso', organizationId, connectionId: connection.id });
    const refused = verdict.allowed ? undefined : verdict;
    throw new SsoRefusal('DEPROVISIONED', "Your access was turned off by your organization's directory", refused, profile.email, userId);
  }
  if (!membership[0]!.member) {
    if (!connection.jitProvisioning) throw new SsoRefusal('NOT_A_MEMBER', 'You are not a member of this organization: ask its admins to add you');
    await tx.query(`INSERT INTO "member" ("organizationId", "userId", "role") VALUES ($1, $2, $3)`, [organizationId, userId, connection.defaultRole]);
  }

  const token = randomBytes(32).toString('base64url');
  let sessionId: string;
  try {
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO "session" ("userId", "token", "expiresAt", "activeOrganizationId", "ipAddress", "userAgent", "authMethod", "ssoConnectionId")
       VALUES ($1, $2, $3, $4, $5, $6, 'sso', $7) RETURNING "id"`,
      [userId, hashToken(token), new Date(Date.now() + sessionLifetimeMs), organizationId, meta.ipAddress ?? null, meta.userAgent?.slice(0, 512) ?? null, connection.id],
    );
    sessionId = rows[0]!.id;
  } catch (error) {
    const verdict = refusedVerdictOf(error) as Extract<SignInVerdict, { allowed: false }> | undefined;
    // A user made in this transaction is rolled back with it: the refusal names the address only.
    if (verdict) throw new SsoRefusal(verdict.code, "Sign-in refused by the organization's policy", verdict, profile.email, created ? undefined : userId);
    throw error;
  }
  await recordAuthEvent(
    tx,
    { type: 'session.signed_in', organizationId, userId, entity: 'session', entityId: sessionId, data: { method: 'sso', protocol: connection.protocol, connectionId: connection.id, connectionName: connection.name } },
    byUser(userId),
  );
  return { userId, sessionId, token, created };
}

/** The one-time code of an app (4.4): 32 bytes, hashed, 60 seconds, bound to the app's PKCE challenge. */
export async function issueAppCode(tx: Queryable, signedIn: SignedInBySso, connection: ConnectionRow, codeChallenge: string): Promise<string> {
  const code = randomBytes(32).toString('base64url');
  // The session is made when the code is exchanged, not before: the one just made is the code's.
  await tx.query(`DELETE FROM "session" WHERE "id" = $1`, [signedIn.sessionId]);
  await tx.query(
    `INSERT INTO "authstrap_sso_code" ("codeHash", "userId", "organizationId", "connectionId", "codeChallenge", "expiresAt") VALUES ($1, $2, $3, $4, $5, now() + interval '60 seconds')`,
    [hashCode(code), signedIn.userId, connection.organizationId, connection.id, codeChallenge],
  );
  return code;
}

export const hashCode = (code: string) => hashToken(code);

/** A refusal answered to an API caller (the token exchange) rather than a browser. */
export const asHttpError = (refusal: SsoRefusal) => new HttpError(refusal.code === 'INVALID_CODE' ? 400 : 403, refusal.code, refusal.message);
