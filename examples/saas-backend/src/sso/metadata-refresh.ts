import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { pollingWorker, type PollingWorker } from '../db/polling-worker.js';
import { withScope, type ScopedQueryable } from '../db/scope.js';
import { recordEvent, type EventContext } from '../events/events.js';
import { certificateColumns, connectionColumns, expiryWarningMs, storeCertificates, type CertificateRow, type ConnectionRow } from './connections.js';
import { discover, fetchSigningKeys } from './oidc.js';
import { certificateFacts, fetchIdpMetadata, type IdpDescription } from './saml.js';

/**
 * The daily refresh of single sign-on connections (docs/sso.md, "Certificates and rollover"):
 * each connection's IdP is read again from where it came from (a SAML metadata URL; an OIDC
 * issuer's discovery and its signing keys), through the same address guard and pinned fetch as
 * when it was added. What the IdP publishes now is kept (a rollover's new certificate joins the
 * old one; one gone from the metadata stops verifying), the outcome is written on the connection
 * (`metadataRefreshedAt`, `metadataRefreshError`), and the organization hears, by an event at most
 * once a day per connection, of an IdP certificate that ends within 30 days and of metadata that
 * could not be read. A failure disables nothing: sign-in goes on with what was read before.
 *
 * Every instance runs the worker; each round claims due connections with
 * `authstrap.due_sso_refreshes` (`FOR UPDATE SKIP LOCKED`, moving them a lease ahead), so one
 * instance refreshes each connection (as the domains' checks, src/domains/domain-checks.ts).
 */

export interface RefreshSettings {
  /** SSO_REFRESH_INTERVAL_HOURS: how long after a refresh the next one is due (24). */
  intervalHours: number;
  /** SSO_REFRESH_POLL_MS: how often an instance looks for due connections (0: never; tests run their own). */
  pollMs: number;
  allowPrivateAddresses: boolean;
}

/** What one refresh found, for the tests and the log. */
export interface RefreshDone {
  connectionId: string;
  /** Null when the IdP was read (or there was nothing to read: an uploaded or typed SAML IdP). */
  error: string | null;
  /** The SAML certificates or the IdP's addresses changed (a rollover). */
  changed: boolean;
  /** The events recorded: none when today's were recorded already. */
  events: string[];
}

const batchSize = 20;
const refreshesAtOnce = 4;
/** A refresh takes seconds (each fetch at most ten): a claim older than this is another instance's to take. */
const leaseSeconds = 600;
/** A failed read is tried again sooner than the next day: the IdP may have been down for minutes. */
const retryAfterFailureMs = 60 * 60 * 1000;
const hourMs = 60 * 60 * 1000;

const systemContext: EventContext = { actorType: 'system' };

/** A JSON value with its keys sorted: discovery documents compared whatever order jsonb gave their keys. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The same UTC day: the events' "once a day". */
const sameDay = (a: Date | null, b: Date) => a !== null && a.toISOString().slice(0, 10) === b.toISOString().slice(0, 10);

/** What the IdP publishes now; nothing is written. An uploaded or typed SAML IdP has nowhere to read from. */
type Published = { protocol: 'saml'; idp: IdpDescription; xml: string } | { protocol: 'oidc'; metadata: Record<string, unknown> } | { protocol: 'none' };

async function readPublished(row: ConnectionRow, allowPrivate: boolean): Promise<Published> {
  if (row.protocol === 'oidc') {
    const metadata = await discover(row.oidcIssuer!, allowPrivate);
    await fetchSigningKeys(metadata, allowPrivate);
    return { protocol: 'oidc', metadata };
  }
  if (!row.samlIdpMetadataUrl) return { protocol: 'none' };
  const { xml, idp } = await fetchIdpMetadata(row.samlIdpMetadataUrl, allowPrivate);
  return { protocol: 'saml', idp, xml };
}

/** Whether the IdP now describes itself otherwise than the stored connection: what sign-in reads changed. */
function differs(row: ConnectionRow, certificates: CertificateRow[], published: Published): boolean {
  if (published.protocol === 'oidc') return canonical(published.metadata) !== canonical(row.oidcMetadata ?? {});
  if (published.protocol === 'none') return false;
  const stored = certificates.filter((certificate) => certificate.source === 'metadata').map((certificate) => certificate.fingerprintSha256);
  const now = published.idp.certificates.map((pem) => certificateFacts(pem).fingerprintSha256);
  return (
    published.idp.entityId !== row.samlIdpEntityId ||
    published.idp.ssoUrl !== row.samlIdpSsoUrl ||
    stored.length !== now.length ||
    now.some((fingerprint) => !stored.includes(fingerprint))
  );
}

/**
 * Refreshes one connection at `now`: reads its IdP (outside any transaction: a slow IdP holds no
 * connection of the pool), then writes what it read, the outcome and the day's events in one
 * transaction of the connection's organization, as the `system` role.
 */
export async function refreshConnection(db: Database, { connectionId, organizationId, now, settings }: { connectionId: string; organizationId: string; now: Date; settings: RefreshSettings }): Promise<RefreshDone | undefined> {
  const asSystem = withScope(db, { organizationId, userId: '', role: 'system' });
  const read = async (tx: ScopedQueryable, lock = '') => {
    const { rows } = await tx.query<ConnectionRow>(`SELECT ${connectionColumns} FROM "authstrap_sso_connection" WHERE "id" = $1 AND "organizationId" = authstrap.organization_id()${lock}`, [connectionId]);
    return rows[0];
  };
  const before = await read(asSystem);
  if (!before) return undefined;
  let published: Published | undefined;
  let error: string | null = null;
  try {
    published = await readPublished(before, settings.allowPrivateAddresses);
  } catch (problem) {
    // SamlProblem and OidcProblem say why in words; anything else is a network error's message.
    error = (problem as Error).message || String(problem);
  }
  return asSystem.transaction(async (tx) => {
    // Changed or deleted since it was read: the row as it is now is the one written.
    const row = await read(tx, ' FOR UPDATE');
    if (!row) return undefined;
    const certificatesOf = async () => (await tx.query<CertificateRow>(`SELECT ${certificateColumns} FROM "authstrap_sso_certificate" WHERE "connectionId" = $1 ORDER BY "notAfter", "id"`, [row.id])).rows;
    const events: string[] = [];
    const changed = published !== undefined && differs(row, await certificatesOf(), published);
    const sets: string[] = ['"metadataRefreshedAt" = $2', '"metadataRefreshError" = $3', '"metadataNextRefreshAt" = $4'];
    const params: unknown[] = [row.id, now, error, new Date(now.getTime() + (error ? Math.min(retryAfterFailureMs, settings.intervalHours * hourMs) : settings.intervalHours * hourMs))];
    const set = (column: string, value: unknown, cast = '') => {
      params.push(value);
      sets.push(`"${column}" = $${params.length}${cast}`);
    };
    if (published?.protocol === 'saml') {
      set('samlMetadataFetchedAt', now);
      if (changed) {
        set('samlIdpEntityId', published.idp.entityId);
        set('samlIdpSsoUrl', published.idp.ssoUrl);
        set('samlIdpMetadataXml', published.xml);
        await storeCertificates(tx, row, { pems: published.idp.certificates, source: 'metadata' });
      }
    }
    if (published?.protocol === 'oidc') {
      set('oidcMetadataFetchedAt', now);
      if (changed) set('oidcMetadata', JSON.stringify(published.metadata), '::jsonb');
    }
    // As a refresh by hand: what sign-in reads changed, so a new test is due before it could be
    // enabled again; an enabled connection stays enabled.
    if (changed) sets.push('"configChangedAt" = clock_timestamp()', '"updatedAt" = now()');
    if (error && !sameDay(row.refreshFailureWarnedAt, now)) {
      set('refreshFailureWarnedAt', now);
      const from = row.protocol === 'oidc' ? row.oidcIssuer : row.samlIdpMetadataUrl;
      await recordEvent(tx, { type: 'sso_connection.refresh_failed', organizationId, entity: 'sso_connection', entityId: row.id, data: { name: row.name, from, error } }, systemContext);
      events.push('sso_connection.refresh_failed');
    }
    const ending = (await certificatesOf()).filter((certificate) => certificate.notAfter.getTime() - now.getTime() < expiryWarningMs);
    if (ending.length > 0 && !sameDay(row.certificateWarnedAt, now)) {
      set('certificateWarnedAt', now);
      const certificates = ending.map(({ fingerprintSha256, subject, notAfter }) => ({ fingerprintSha256, subject, notAfter: notAfter.toISOString(), expired: notAfter.getTime() <= now.getTime() }));
      await recordEvent(tx, { type: 'sso_connection.certificate_expiring', organizationId, entity: 'sso_connection', entityId: row.id, data: { name: row.name, certificates } }, systemContext);
      events.push('sso_connection.certificate_expiring');
    }
    await tx.query(`UPDATE "authstrap_sso_connection" SET ${sets.join(', ')} WHERE "id" = $1`, params);
    return { connectionId: row.id, error, changed, events };
  });
}

/** Refreshes every connection due now (by the clock), a batch at a time; `runOnce` answers what each found. */
export type MetadataRefresh = PollingWorker<RefreshDone[]>;

/** The worker every instance runs; `clock` is the time a round acts at (tests set it). */
export function createMetadataRefresh({ db, logger, settings, clock = () => new Date() }: { db: Database; logger: Logger; settings: RefreshSettings; clock?: () => Date }): MetadataRefresh {
  const refreshClaimed = async (claimed: { id: string; organizationId: string }, now: Date): Promise<RefreshDone | undefined> => {
    try {
      const done = await refreshConnection(db, { connectionId: claimed.id, organizationId: claimed.organizationId, now, settings });
      if (done?.error) logger.warn({ connectionId: claimed.id, err: done.error }, "could not read a single sign-on connection's identity provider; sign-in goes on with what was read before");
      return done;
    } catch (error) {
      // Its lease runs out and another round takes it again.
      logger.warn({ connectionId: claimed.id, err: (error as Error)?.message }, 'single sign-on refresh failed; it is tried again later');
      return undefined;
    }
  };

  const round = async (stopped: () => boolean) => {
    const done: RefreshDone[] = [];
    for (;;) {
      const now = clock();
      const { rows } = await db.query<{ id: string; organizationId: string }>('SELECT * FROM authstrap.due_sso_refreshes($1, $2, $3)', [batchSize, now, leaseSeconds]);
      for (let start = 0; start < rows.length; start += refreshesAtOnce) {
        const results = await Promise.all(rows.slice(start, start + refreshesAtOnce).map((claimed) => refreshClaimed(claimed, now)));
        done.push(...results.filter((result): result is RefreshDone => result !== undefined));
      }
      if (rows.length < batchSize || stopped()) return done;
    }
  };

  return pollingWorker({ round, pollMs: settings.pollMs, logger, what: 'single sign-on connections due a refresh' });
}
