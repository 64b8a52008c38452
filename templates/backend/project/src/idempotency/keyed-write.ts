import type { Request, Response } from 'express';
import { type Database, type OpenTransaction, type PipelineOutcome, type QueryResult } from '../db/database.js';
import type { Statement } from '../db/sql.js';
import type { Config } from '../config.js';
import { secretSeal, type SecretSeal } from '../events/webhook-secrets.js';
import { HttpError } from '../http/errors.js';
import {
  claimStatement,
  fingerprintKeyOf,
  forgetExpiredStatement,
  forgetStatement,
  idempotencyHeader,
  keptWithStatement,
  legacyRequestFingerprint,
  presentedIdempotencyKey,
  recordStatement,
  requestFingerprint,
  storedAnswerStatement,
  type KeyOwner,
  type StoredAnswer,
} from './keys.js';

/**
 * A write sent with an `Idempotency-Key`, from its first statement to its answer:
 *
 *   BEGIN  <the caller's scope>  <the key taken: claimStatement>  <the route's statement>   (one round trip)
 *   ... the route answers:
 *   <the answer kept with the key>  COMMIT                                                (one round trip)
 *   ... and only then is the answer sent
 *
 * so the write and its answer are committed together or not at all: a repeat finds either both
 * (and gets the answer again) or neither (and is the write). A repeat that comes while the first
 * is still running waits for it on the key's row, up to `lockWaitMs`, then gets a 409. An answer
 * of 400 or more is not kept: the transaction is rolled back, and the key is free for the next try;
 * except a refusal that is on the record (keepFailure), kept as a success is.
 *
 * A generated entity route's write (POST, PUT, PATCH, DELETE) needs none of that: its statement's
 * rows are its answer, so the statement keeps the answer itself, and the whole keyed write is one
 * round trip in one implicit transaction (writeKeepingAnswer), as a write without a key is.
 *
 * Writes without the header never come here: their statements go in one round trip as ever
 * (tenant.guard.ts, asCaller).
 */
export class KeyedWrite {
  private tx: OpenTransaction | undefined;
  /** new: no transaction yet (or rolled back before the answer); open: held; ending: the answer is being kept; ended. */
  private state: 'new' | 'open' | 'ending' | 'ended' = 'new';
  private answerHooked = false;
  /** Rolled back because the client went away: the request's later work must not run elsewhere (held-transaction.ts). */
  private abandonedByClient = false;
  /** The answer is kept with the key even if it is a failure (keepFailure): a refusal on the record. */
  private failureKept = false;
  /** What waits for the commit (a wake-up of the outbox's worker): run once the write is committed. */
  private readonly committed: (() => void)[] = [];
  /**
   * The last statement sent on the held connection: the next waits for it. A request's statements
   * may come concurrently (Promise.all), and a pipeline writes to the connection directly.
   */
  private inFlight: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly req: Request,
    private readonly res: Response,
    private readonly settings: KeyedWriteSettings,
  ) {}

  /** The key the request came with: a 400 for a malformed one (thrown once the caller is known). */
  key(): string {
    return presentedIdempotencyKey(this.req)!;
  }

  wellFormed(): boolean {
    try {
      this.key();
      return true;
    } catch {
      return false;
    }
  }

  /** The transaction is held: the request's later statements run in it (`query`). */
  get holding(): boolean {
    return this.state === 'open';
  }

  /**
   * Opens the transaction and runs, in one round trip, `preamble` (the caller's scope), the key's
   * claim, then `statements`. The outcome is what db.pipeline gives for `preamble` and
   * `statements`: a key already used is the error at the claim's place (results.length is
   * preamble.length), to be turned into its answer by `refusal` once the caller is known.
   */
  async begin(db: Database, preamble: Statement[], statements: Statement[]): Promise<PipelineOutcome> {
    const { owner } = this.settings;
    const key = this.key();
    // The owner's own preamble (the service key's) and the claim: their results are not the caller's.
    const claim = [...owner.preamble, claimStatement(owner, key, requestFingerprint(this.req, this.settings.fingerprintKey), this.settings.keyHours, this.settings.lockWaitMs), ...(owner.postamble ?? [])];
    const tx = await db.begin([...preamble, ...claim, ...statements]);
    this.tx = tx;
    this.state = 'open';
    this.hookAnswer();
    return this.claimed(tx.started, preamble.length, claim.length);
  }

  /**
   * A generated route's one write whose rows are its answer (tenant.guard.ts, `answering`): the
   * write and the answer kept with the key, in one statement, one round trip and one implicit
   * transaction, with no transaction held across the route and nothing looked up first:
   *
   *   <preamble>  <the write, keeping its answer with the key: keptWithStatement>
   *
   * The key's unique index decides (keys.ts): a key used already is the error at the claim's
   * place, as `begin`'s is. A write that fails or finds nothing is looked up afterwards
   * (repeatedAnswer): it may be a repeat. `body`: the answer's body in SQL over the written row
   * (jsonDataSql), or '' for a 204. A write that finds nothing (a 404) or fails (a 409) keeps
   * nothing.
   */
  async writeKeepingAnswer(db: Database, preamble: Statement[], write: Statement, answer: { status: number; body: string }): Promise<PipelineOutcome> {
    const { owner, keyHours, lockWaitMs } = this.settings;
    const kept = keptWithStatement(owner, write, { key: this.key(), fingerprint: requestFingerprint(this.req, this.settings.fingerprintKey), hours: keyHours, lockWaitMs, ...answer });
    const outcome = this.claimed(await db.pipeline([...preamble, ...owner.preamble, kept]), preamble.length, owner.preamble.length);
    const written = outcome.error === undefined ? outcome.results[preamble.length] : undefined;
    // The write's rows are the statement's (SELECT * FROM "written"); the embedded database counts none for a SELECT.
    if (written) written.rowCount = written.rows.length;
    return outcome;
  }

  /**
   * For a write by writeKeepingAnswer that failed (not on its key) or wrote nothing: whether it
   * is a repeat of a write that succeeded, which its key tells. A DELETE sent again finds its row
   * gone (a 404); a create sent again may run into its first's unique name (a 409). If the key
   * was used: what `refusal` answers for it (the kept answer again, a 422, a 409); if not,
   * undefined, and the write's own answer stands (so it does when the lookup itself fails: its
   * failure is not the write's answer). The write's transaction has ended already.
   */
  async repeatedAnswer(db: Database, scope: Statement[] = []): Promise<ReplayedAnswer | HttpError | undefined> {
    const answer = await this.keptAnswer(db, scope, undefined).catch(() => undefined);
    return answer instanceof ReplayedAnswer || answer instanceof HttpError ? answer : undefined;
  }

  /** Whether a write failed on its key (used already, or its first still running): `refusal` answers it. */
  tookTheKey(error: unknown): boolean {
    return error instanceof KeyTaken;
  }

  /**
   * `outcome` without the claim's results; a key already used is the error at the claim's place,
   * and so is a write that ran into the key (its kept answer inserted where another request's is:
   * a request that took it by the held path, claimStatement).
   */
  private claimed(outcome: PipelineOutcome, claimAt: number, claimLength: number): PipelineOutcome {
    const results = [...outcome.results.slice(0, claimAt), ...outcome.results.slice(claimAt + claimLength)];
    if (outcome.error === undefined) return { results };
    const failedAt = outcome.results.length;
    const inClaim = failedAt >= claimAt && failedAt < claimAt + claimLength;
    return { results, error: inClaim || this.ranIntoKey(outcome.error) ? new KeyTaken(outcome.error) : outcome.error };
  }

  private ranIntoKey(error: unknown): boolean {
    const { code, constraint, where } = error as { code?: string; constraint?: string; where?: string };
    if (code === '23505') return constraint === this.settings.owner.claimedIndex;
    return code === '55P03' && where !== undefined && where.includes(this.settings.owner.claimedIndex);
  }

  /** A later statement of the request, in the held transaction (its scope is set already). */
  query<Row>(text: string, params?: unknown[]): Promise<QueryResult<Row>> {
    return this.afterInFlight(() => this.tx!.query<Row>(text, params));
  }

  /** Later statements in one round trip, in the held transaction, up to the first that fails. */
  pipeline(statements: Statement[]): Promise<PipelineOutcome> {
    return this.afterInFlight(() => this.tx!.pipeline(statements));
  }

  private afterInFlight<T>(send: () => Promise<T>): Promise<T> {
    const sent = this.inFlight.then(send);
    this.inFlight = sent.catch(() => {});
    return sent;
  }

  /** The client went away before the answer and the write was rolled back. */
  get abandoned(): boolean {
    return this.abandonedByClient;
  }

  /** Runs `work` once the write is committed (at once if no transaction is held); never if it is rolled back. */
  afterCommit(work: () => void): void {
    if (this.state === 'open' || this.state === 'ending') this.committed.push(work);
    else work();
  }

  /**
   * The request's answer is kept with the key even if it is a failure (a 4xx; a 5xx says "send it
   * again" and is never kept): for a refusal whose record is in this transaction (a refused
   * sign-in, held-transaction.ts `recordRefusalOnce`), so that a repeat gets the refusal again
   * instead of making another record of it.
   */
  keepFailure(): void {
    this.failureKept = true;
  }

  /**
   * Takes the key again, in a new transaction, for a write whose statement failed and was rolled
   * back (`refusal`) but whose failure is to be kept (keepFailure). A repeat that took the key in
   * the meantime has kept its answer, which is then this request's too: thrown, as `refusal`
   * answers it. Holding already: nothing to do.
   */
  async retake(db: Database): Promise<void> {
    if (this.state === 'open') return;
    if (this.state !== 'new' || this.abandonedByClient) throw new Error('A keyed write takes its key again only before its answer, while its client waits for it');
    const outcome = await this.begin(db, [], []);
    if (outcome.error !== undefined) throw await this.refusal(db, outcome.error);
  }

  /** Rolls back before any answer (the caller was refused, or is checked again): nothing was kept. */
  async rollback(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'new';
    // A statement still on its way finishes first: the connection takes one thing at a time.
    await this.inFlight;
    await this.tx!.rollback();
  }

  /**
   * What to answer for `error`, the request's failure once the caller is known; the transaction is
   * rolled back. A key already used: its kept answer again (ReplayedAnswer), a 422 when it was
   * used for another request, a 409 while its first request is still running. `scope`: the
   * caller's (setScopeStatement), for a key of a caller in an organization.
   */
  async refusal(db: Database, error: unknown, scope: Statement[] = []): Promise<unknown> {
    await this.rollback();
    if (!(error instanceof KeyTaken)) return error;
    const { owner } = this.settings;
    const cause = error.cause as { code?: string; constraint?: string };
    if (cause.code === '55P03') return stillRunning();
    if (cause.code !== '23505' || cause.constraint !== owner.claimedIndex) return cause;
    // Gone since (pruned at its expiry): the next try takes the key afresh.
    return this.keptAnswer(db, scope, stillRunning());
  }

  /**
   * The answer for a key that is used: its kept answer again (ReplayedAnswer), a 422 when it was
   * used for another request, a 409 while its first request is still running or once it has
   * expired; `unused` when there is no such key.
   */
  private async keptAnswer(db: Database, scope: Statement[], unused: unknown): Promise<unknown> {
    const { owner } = this.settings;
    const key = this.key();
    const asOwner = [...scope, ...owner.preamble];
    const outcome = await db.pipeline([...asOwner, storedAnswerStatement(owner, key)]);
    if (outcome.error !== undefined) return outcome.error;
    const stored = outcome.results[asOwner.length]?.rows[0] as StoredAnswer | undefined;
    if (!stored) return unused;
    if (stored.status === null) return stillRunning();
    if (stored.expired) {
      await db.pipeline([...asOwner, forgetExpiredStatement(owner, key)]);
      return new HttpError(409, 'CONFLICT', `This ${idempotencyHeader} has expired (IDEMPOTENCY_KEY_HOURS); it is free now: send the request again`, undefined, 1);
    }
    if (stored.fingerprint !== requestFingerprint(this.req, this.settings.fingerprintKey) && stored.fingerprint !== legacyRequestFingerprint(this.req)) {
      return new HttpError(422, 'IDEMPOTENCY_KEY_REUSED', `This ${idempotencyHeader} was sent with another request (method, path, organization or body): use a new key for a new request`);
    }
    let kept: string;
    try {
      kept = stored.body ? this.settings.seal.open(stored.body) : '';
    } catch {
      return new HttpError(409, 'CONFLICT', `The answer kept for this ${idempotencyHeader} was sealed under another AUTH_SECRET and cannot be sent again: use a new key`);
    }
    const { body, setCookie } = openedAnswer(kept);
    return new ReplayedAnswer(stored.status, body, setCookie);
  }

  /**
   * Holds the response back until the answer is kept and committed: res.end, the last thing every
   * answer calls, waits for the commit. A commit that fails turns the answer into a 503: the
   * client cannot know whether the write was kept, and sends it again with the same key. A client
   * that goes away before the answer rolls the write back: nobody heard of it.
   */
  private hookAnswer(): void {
    if (this.answerHooked) return;
    this.answerHooked = true;
    const res = this.res;
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.end = ((...args: unknown[]) => {
      if (this.state !== 'open') {
        if (this.state === 'new') this.state = 'ended';
        return end(...args);
      }
      this.state = 'ending';
      const chunk = typeof args[0] === 'function' ? undefined : args[0];
      this.keepAnswer(res.statusCode, chunk).then(
        () => end(...args),
        (error) => this.answerUnavailable(end, error),
      );
      return res;
    }) as Response['end'];
    res.once('close', () => {
      if (this.state !== 'open') return;
      this.abandonedByClient = true;
      void this.rollback();
    });
  }

  private async keepAnswer(status: number, chunk: unknown): Promise<void> {
    const tx = this.tx!;
    const { owner, seal } = this.settings;
    try {
      await this.inFlight;
      if (status >= 400 && !(this.failureKept && status < 500)) {
        if (!this.settings.failuresKeepTheirWork) return await tx.rollback();
        // What the request did before it failed (a failed sign-in's record) is kept, as it is
        // without a key; the key is freed for the next try.
        await tx.commit([...owner.preamble, forgetStatement(owner, this.key())]);
      } else {
        const body = chunk === undefined || chunk === null ? '' : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk);
        const kept = keptAnswer(body, this.res.getHeader('set-cookie'));
        // The answer and the commit in one round trip: both or neither. The owner's preamble again
        // first: the route's statements may have set a scope of their own since the claim.
        await tx.commit([...owner.preamble, recordStatement(owner, this.key(), status, kept && seal.seal(kept))]);
      }
      for (const work of this.committed.splice(0)) work();
    } finally {
      this.state = 'ended';
    }
  }

  private answerUnavailable(end: (...args: unknown[]) => Response, error: unknown): void {
    this.req.log.error({ err: error }, 'a keyed write could not be committed');
    const body = JSON.stringify({
      success: false,
      error: { code: 'SERVICE_UNAVAILABLE', message: `The write could not be confirmed: send it again with the same ${idempotencyHeader}` },
    });
    this.res.statusCode = 503;
    this.res.setHeader('Retry-After', '1');
    this.res.setHeader('Content-Type', 'application/json; charset=utf-8');
    this.res.setHeader('Content-Length', String(Buffer.byteLength(body)));
    end(body);
  }
}

export interface KeyedWriteSettings {
  /** Whose keys the routes' writes take: a caller's in their organization, or the service key's. */
  owner: KeyOwner;
  /** IDEMPOTENCY_KEY_HOURS */
  keyHours: number;
  /** How long a repeat waits for the first request with its key (see claimStatement). */
  lockWaitMs: number;
  /**
   * Kept answers are sealed at rest under AUTH_SECRET (as webhook secrets are): an answer may hold
   * a secret shown once (a new webhook endpoint's), which a copy of the database must not give away.
   */
  seal: SecretSeal;
  /** The key of the requests' fingerprints (an HMAC under AUTH_SECRET: keys.ts). */
  fingerprintKey: Buffer;
  /**
   * An answer of 400 or more commits what the request did and frees the key, instead of rolling
   * it all back: for the built-in routes, whose work before a refusal is kept without a key too
   * (held-transaction.ts). The routes behind tenantScoped roll back.
   */
  failuresKeepTheirWork?: boolean;
}

/** The settings of `owner`'s keyed writes, from the backend's. */
export function keyedWriteSettings(config: Pick<Config, 'idempotency' | 'databaseTimeouts' | 'authSecret'>, owner: KeyOwner): KeyedWriteSettings {
  return {
    owner,
    keyHours: config.idempotency.keyHours,
    // A repeat waits for its first request up to half a statement's time, then gets a 409 rather than the statement's 503.
    lockWaitMs: Math.max(100, Math.floor(config.databaseTimeouts.queryMs / 2)),
    seal: secretSeal(config.authSecret, 'kept answers of keyed writes'),
    fingerprintKey: fingerprintKeyOf(config.authSecret),
  };
}

/**
 * What is kept of an answer: its body; with the cookies it set (a sign-in's session cookie), a
 * mark no JSON body starts with, then both as JSON. An answer kept before cookies were is a body.
 */
const withCookies = '\u0001';

function keptAnswer(body: string, setCookie: string | number | string[] | undefined): string {
  if (setCookie === undefined) return body;
  return withCookies + JSON.stringify({ body, setCookie: Array.isArray(setCookie) ? setCookie : [String(setCookie)] });
}

function openedAnswer(kept: string): { body: string; setCookie?: string[] } {
  if (!kept.startsWith(withCookies)) return { body: kept };
  return JSON.parse(kept.slice(withCookies.length)) as { body: string; setCookie: string[] };
}

/** The key's claim failed: `cause` says why (used already, or its first request still running). */
class KeyTaken extends Error {
  override name = 'KeyTaken';
  constructor(cause: unknown) {
    super('The Idempotency-Key is taken', { cause });
  }
}

const stillRunning = () =>
  new HttpError(409, 'CONFLICT', `A request with this ${idempotencyHeader} is still being processed: send it again in a moment`, undefined, 1);

/** A repeat's answer: the first request's status, body and cookies, sent again as they were (http/errors.ts). */
export class ReplayedAnswer extends Error {
  override name = 'ReplayedAnswer';
  constructor(
    readonly status: number,
    readonly body: string,
    readonly setCookie?: string[],
  ) {
    super('A repeat of a keyed write');
  }
}

/**
 * The request's KeyedWrite, when it is a write (POST, PUT, PATCH, DELETE) that came with an
 * Idempotency-Key; made once per request.
 */
export function keyedWriteOf(req: Request, settings: KeyedWriteSettings): KeyedWrite | undefined {
  if (req.method === 'GET' || req.method === 'HEAD' || req.headers['idempotency-key'] === undefined) return undefined;
  return (req.keyedWrite ??= new KeyedWrite(req, req.res!, settings));
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** A write with an Idempotency-Key (idempotency/keyed-write.ts). */
      keyedWrite?: KeyedWrite;
    }
  }
}
