import type { DatabaseProbe } from '../verify/database.js';
import type { HttpClient } from '../verify/http.js';
import { fail, pass, plural, skip, warn, type Check, type Finding, type Outcome } from './check.js';

/**
 * Single sign-on connections (the backend's src/sso/, docs/sso.md): for each enabled connection of
 * each organization, that its identity provider could be read at its last refresh (SAML metadata
 * that parses, OIDC discovery and signing keys that answer), that its IdP certificates are in date
 * (expired fails, within 30 days warns, unless a later one is already listed: a rollover), that the
 * redirect URI or ACS URL the backend hands the IdP reaches this backend (AUTH_URL), and that the
 * organization's verified domains still have their TXT records (the backend's scheduled checks).
 *
 * The facts come from the database (the connections, their certificates and last refresh, the
 * domains' states): `fix` and `verify` in the project folder read them the same way (`examine`),
 * and `verify` with a database (`probe`) also asks the backend for the addresses it gives IdPs.
 * `fix` can ask for a refresh now (the backend's refresh worker reads the IdP within
 * SSO_REFRESH_POLL_MS); what it cannot repair, the message says where to change.
 */

const dayMs = 24 * 60 * 60 * 1000;
const warningDays = 30;

export interface SsoConnectionFacts {
  id: string;
  name: string;
  organization: string;
  protocol: 'oidc' | 'saml';
  /** Where its IdP is read from: an OIDC issuer, a SAML metadata URL; null for an uploaded or typed SAML IdP. */
  readFrom: string | null;
  refreshedAt: Date | null;
  refreshError: string | null;
  /** A refresh is queued (by fix), under way, or due within ten minutes: the outcome above is not the last word. */
  refreshDue: boolean;
  certificates: { subject: string | null; notAfter: Date }[];
}

export interface SsoDomainFacts {
  domain: string;
  organization: string;
  state: string;
  failingSince: Date | null;
  txtToken: string;
}

export interface SsoFacts {
  /** The database's clock: certificate dates are judged by it. */
  now: Date;
  connections: SsoConnectionFacts[];
  /** Domains that no longer count or are about to stop (failing, lapsed) of organizations with an enabled connection. */
  domains: SsoDomainFacts[];
}

/** The enabled connections and their facts; undefined when the database has no SSO tables (a backend from before them). */
export async function readSsoFacts(db: DatabaseProbe): Promise<SsoFacts | undefined> {
  const [table] = await db.query<{ exists: boolean }>(`SELECT to_regclass('authstrap_sso_connection') IS NOT NULL AS "exists"`);
  if (!table?.exists) return undefined;
  const [hasRefresh] = await db.query<{ exists: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'authstrap_sso_connection' AND column_name = 'metadataRefreshedAt') AS "exists"`,
  );
  // A backend from before the daily refresh has no outcome to read: the certificates and domains are still judged.
  const refresh = hasRefresh?.exists
    ? // Due within the ten minutes of the worker's lease: queued (by fix), under way (a claim moves it ten minutes on), or about to be.
      `c."metadataRefreshedAt" AS "refreshedAt", c."metadataRefreshError" AS "refreshError", c."metadataNextRefreshAt" <= now() + interval '10 minutes' AS "refreshDue"`
    : `NULL::timestamptz AS "refreshedAt", NULL::text AS "refreshError", false AS "refreshDue"`;
  const [clock] = await db.query<{ now: Date }>('SELECT now() AS "now"');
  const connections = await db.query<Omit<SsoConnectionFacts, 'certificates'>>(
    `SELECT c."id", c."name", o."name" AS "organization", c."protocol",
            CASE WHEN c."protocol" = 'oidc' THEN c."oidcIssuer" ELSE c."samlIdpMetadataUrl" END AS "readFrom", ${refresh}
       FROM "authstrap_sso_connection" c JOIN "Organization" o ON o."id" = c."organizationId"
      WHERE c."enabled" ORDER BY o."name", c."name", c."id"`,
  );
  const certificates = await db.query<{ connectionId: string; subject: string | null; notAfter: Date }>(
    `SELECT "connectionId", "subject", "notAfter" FROM "authstrap_sso_certificate" WHERE "connectionId" = ANY($1::uuid[]) ORDER BY "notAfter"`,
    [connections.map((connection) => connection.id)],
  );
  const domains = await db.query<SsoDomainFacts>(
    `SELECT d."domain", o."name" AS "organization", d."state", d."failingSince", d."txtToken"
       FROM "authstrap_domain" d JOIN "Organization" o ON o."id" = d."organizationId"
      WHERE d."state" IN ('failing', 'lapsed')
        AND EXISTS (SELECT 1 FROM "authstrap_sso_connection" c WHERE c."organizationId" = d."organizationId" AND c."enabled")
      ORDER BY d."domain"`,
  );
  return {
    now: new Date(clock!.now),
    connections: connections.map((connection) => ({ ...connection, certificates: certificates.filter((certificate) => certificate.connectionId === connection.id).map(({ subject, notAfter }) => ({ subject, notAfter: new Date(notAfter) })) })),
    domains,
  };
}

const named = (connection: SsoConnectionFacts) => `"${connection.name}" (${connection.organization})`;
const day = (date: Date) => date.toISOString().slice(0, 10);
/** Where an IdP's new certificate goes when the backend cannot read it by itself. */
const uploadAdvice = (connection: SsoConnectionFacts) =>
  `give it the IdP's new certificate: PATCH /sso-connections/${connection.id} with saml.metadataXml or saml.certificates (Settings > Single sign-on)`;

interface Judged {
  status: 'pass' | 'warn' | 'fail';
  sentence: string;
  /** The connection's IdP can be read again, which may clear this: fix asks for a refresh. */
  refreshable?: boolean;
}

/** One connection's refresh and certificates, judged at `now`. */
function judgeConnection(connection: SsoConnectionFacts, now: Date): Judged[] {
  const judged: Judged[] = [];
  const queued = connection.refreshDue ? ' (a refresh is queued or under way: the backend reads its IdP again within minutes)' : '';
  if (connection.refreshError) {
    const what = connection.protocol === 'oidc' ? `its issuer ${connection.readFrom}` : `its metadata URL ${connection.readFrom}`;
    judged.push({
      status: 'fail',
      sentence: `${named(connection)}: ${what} could not be read${connection.refreshedAt ? ` on ${day(connection.refreshedAt)}` : ''} (${connection.refreshError}); sign-in uses what was read before. Correct the address at the IdP or with PATCH /sso-connections/${connection.id}${queued}`,
      refreshable: !connection.refreshDue,
    });
  }
  if (connection.protocol !== 'saml') return judged;
  const left = (certificate: { notAfter: Date }) => certificate.notAfter.getTime() - now.getTime();
  const expired = connection.certificates.filter((certificate) => left(certificate) <= 0);
  const valid = connection.certificates.filter((certificate) => left(certificate) > 0);
  const lasting = valid.filter((certificate) => left(certificate) >= warningDays * dayMs);
  const ending = valid.filter((certificate) => left(certificate) < warningDays * dayMs);
  const remedy = connection.readFrom ? `the IdP must publish its next certificate at ${connection.readFrom}` : uploadAdvice(connection);
  if (valid.length === 0) {
    const last = expired.at(-1);
    judged.push({
      status: 'fail',
      sentence: `${named(connection)}: ${last ? `its IdP certificate expired on ${day(last.notAfter)}` : 'it lists no IdP certificate'}, so every sign-in through it is refused; ${remedy}${queued}`,
      refreshable: connection.readFrom !== null && !connection.refreshDue,
    });
  } else if (lasting.length === 0) {
    const first = ending[0]!;
    const days = Math.ceil(left(first) / dayMs);
    judged.push({ status: 'warn', sentence: `${named(connection)}: its IdP certificate expires on ${day(first.notAfter)} (in ${plural(days, 'day')}) and no later one is listed; ${remedy}${queued}`, refreshable: connection.readFrom !== null && !connection.refreshDue });
  } else if (expired.length > 0) {
    judged.push({ status: 'pass', sentence: `${named(connection)}: an expired IdP certificate is still listed beside a valid one (it verifies nothing)` });
  }
  return judged;
}

/** A verified domain's TXT record gone (its organization's SSO routing and enforcement stop once it lapses). */
function judgeDomain(domain: SsoDomainFacts): Judged {
  const record = `_authstrap-verification.${domain.domain} TXT "authstrap-domain-verification=${domain.txtToken}"`;
  return domain.state === 'lapsed'
    ? { status: 'warn', sentence: `${domain.domain} (${domain.organization}) lapsed: its TXT record is gone, so it routes and enforces nothing; publish ${record} and verify it again` }
    : { status: 'warn', sentence: `${domain.domain} (${domain.organization}): its TXT record is gone${domain.failingSince ? ` since ${day(domain.failingSince)}` : ''}; publish ${record} again before it lapses` };
}

const statusOf = (judged: Judged[]) => (judged.some((one) => one.status === 'fail') ? 'fail' : judged.some((one) => one.status === 'warn') ? 'warn' : 'pass');

/**
 * Pure: what the facts say, and the repair fix can make (a refresh now of the connections whose
 * IdP can be read again). The message lists what is wrong, or what was checked.
 */
export function ssoVerdict(facts: SsoFacts | undefined): Finding {
  if (!facts) return skip('the database has no single sign-on tables (start the backend once after `authstrap generate`)');
  // Nothing to check is no failure to run: a project without SSO passes, as one without operators does outside production.
  if (facts.connections.length === 0) return pass('no enabled single sign-on connection: nothing to check');
  const judged: (Judged & { connection?: SsoConnectionFacts })[] = [
    ...facts.connections.flatMap((connection) => judgeConnection(connection, facts.now).map((one) => ({ ...one, connection }))),
    ...facts.domains.map(judgeDomain),
  ];
  const status = statusOf(judged);
  const refreshable = [...new Set(judged.flatMap((one) => (one.connection && one.refreshable ? [one.connection] : [])))];
  const shown = judged.filter((one) => one.status === status);
  const message =
    status === 'pass'
      ? [`${plural(facts.connections.length, 'enabled connection')}: IdP read at the last refresh, certificates in date, verified domains' TXT records found`, ...judged.map((one) => one.sentence)].join('; ')
      : shown.map((one) => one.sentence).join('; ');
  const finding: Finding = { status, message };
  if (refreshable.length > 0) {
    finding.repair = {
      summary: `read the IdP of ${plural(refreshable.length, 'connection')} again now (${refreshable.map((connection) => `"${connection.name}"`).join(', ')}): the running backend does within SSO_REFRESH_POLL_MS`,
      files: [],
      sql: [`UPDATE "authstrap_sso_connection" SET "metadataNextRefreshAt" = now() WHERE "id" IN (${refreshable.map((connection) => `'${connection.id}'`).join(', ')})`],
    };
  }
  return finding;
}

/**
 * The addresses the backend gives each enabled connection's IdP (a SAML ACS in its public SP
 * metadata; an OIDC redirect URI in a sign-in's start) must reach this backend: at the address
 * verify reaches it, or, when AUTH_URL names another (a proxy in front), answering there as this
 * backend does.
 */
/** Loopback names are one place: AUTH_URL=http://localhost:3000 is the backend verify reaches at 127.0.0.1:3000. */
const loopback = new Set(['localhost', '127.0.0.1', '[::1]']);
const samePlace = (url: string, here: URL) => {
  const there = new URL(url);
  return there.origin === here.origin || (there.protocol === here.protocol && there.port === here.port && loopback.has(there.hostname) && loopback.has(here.hostname));
};

async function judgeAddresses(http: HttpClient, connections: SsoConnectionFacts[]): Promise<Judged[]> {
  const base = new URL(http.baseUrl);
  const here = base.origin;
  const judged: Judged[] = [];
  for (const connection of connections) {
    const fixHint = `set AUTH_URL to this backend's public address (${here}) and give the IdP the new ${connection.protocol === 'saml' ? 'ACS URL (or SP metadata)' : 'redirect URI'}`;
    if (connection.protocol === 'saml') {
      const metadata = await http('GET', `/api/auth/sso/${connection.id}/saml/metadata`);
      const acs = /AssertionConsumerService[^>]*Location="([^"]+)"/.exec(metadata.text)?.[1];
      if (metadata.status !== 200 || !acs) {
        judged.push({ status: 'fail', sentence: `${named(connection)}: its SP metadata answered ${metadata.status}, without an ACS URL` });
        continue;
      }
      const entityId = /entityID="([^"]+)"/.exec(metadata.text)?.[1];
      if (samePlace(acs, base)) continue;
      // Another origin: the same backend behind it answers the same SP metadata there.
      const there = entityId ? await fetch(entityId, { signal: AbortSignal.timeout(5000), redirect: 'manual' }).then((answer) => answer.text(), () => undefined) : undefined;
      if (there !== metadata.text) judged.push({ status: 'fail', sentence: `${named(connection)}: the IdP posts to the ACS URL ${acs}, which does not reach this backend; ${fixHint}` });
    } else {
      const started = await http('POST', '/api/auth/sso/start', { body: { connectionId: connection.id } });
      const redirectUri = typeof started.body?.data?.url === 'string' ? new URL(started.body.data.url).searchParams.get('redirect_uri') : null;
      if (started.status !== 200 || !redirectUri) {
        judged.push({ status: 'fail', sentence: `${named(connection)}: a sign-in could not start (${started.status}${started.body?.error?.message ? ` ${started.body.error.message}` : ''})` });
        continue;
      }
      if (samePlace(redirectUri, base)) continue;
      // Another origin: this backend's callback there sends a browser without a flow back to the sign-in page with an SSO error.
      const there = await fetch(redirectUri, { signal: AbortSignal.timeout(5000), redirect: 'manual' }).then((answer) => answer.headers.get('location') ?? '', () => '');
      if (!/[?&]error=SSO_/.test(there)) judged.push({ status: 'fail', sentence: `${named(connection)}: the IdP sends browsers back to ${redirectUri}, which does not reach this backend; ${fixHint}` });
    }
  }
  return judged;
}

export const ssoConnections: Check = {
  id: 'sso-connections',
  title: 'Single sign-on connections can sign people in',
  examine(project) {
    if (!project.database) return skip(project.databaseNote ?? 'the database was not checked');
    return ssoVerdict(project.database.sso);
  },
  probe: {
    needs: 'database',
    async run({ db, http }): Promise<Outcome> {
      const facts = await readSsoFacts(db!);
      const verdict = ssoVerdict(facts);
      if (verdict.status === 'skip' || !facts) return verdict;
      const addresses = await judgeAddresses(http, facts.connections);
      const status = statusOf([...addresses, { status: verdict.status as Judged['status'], sentence: '' }]);
      // The facts' sentences as examine words them (verify in the project folder shows each once), then the addresses'.
      const sentences = [
        ...(verdict.status === status || status === 'pass' ? [verdict.message] : []),
        ...(status === 'pass' ? ['the redirect URIs and ACS URLs reach this backend'] : addresses.filter((one) => one.status === status).map((one) => one.sentence)),
      ];
      return status === 'fail' ? fail(sentences.join('; ')) : status === 'warn' ? warn(sentences.join('; ')) : pass(sentences.join('; '));
    },
  },
  advice: 'see docs/sso.md ("Certificates and rollover", "Checks"): the message says what to change at the IdP or in the backend',
};
