import type { Response } from 'express';
import type { Logger } from 'pino';
import type { RealtimeSettings } from '../config.js';
import type { Database } from '../db/database.js';
import { machineKeyStatement, type MachineKeyRow } from '../db/scope.js';
import type { Role } from '../auth/types.js';
import { createStreamReader, readEvents, streamBounds, type PositionedEvent } from './stream-reader.js';
import { visibleEvent, type Interest, type Listener, type StreamedEvent } from './stream-rules.js';

/**
 * The live streams this instance holds (GET /realtime: realtime.router.ts), fed by its one
 * reader (stream-reader.ts). Each event is judged for each stream of its organization here, in
 * this process (stream-rules.ts); nothing is asked of PostgreSQL per stream and event.
 *
 * A stream is Server-Sent Events: each delivery is `id: <position>` (the cursor a client resumes
 * from with Last-Event-ID), `event: <type>` and `data: <the event as JSON>`. A stream ends with an
 * `end` event whose data says why (the membership or key is gone, the client is too slow, the
 * instance is stopping); a client that reconnects with its Last-Event-ID misses nothing it may
 * still read.
 */

/** Who holds a stream, as checked again every REALTIME_RECHECK_MS. */
export type Holder =
  | { kind: 'session'; sessionId: string; userId: string }
  | { kind: 'key'; hashedKey: string; keyId: string };

export interface StreamRequest {
  organizationId: string;
  listener: Listener;
  holder: Holder;
  interests: Interest[];
  /** The position the client last received (Last-Event-ID), when it resumes. */
  resumeAfter?: number;
}

interface Stream extends StreamRequest {
  res: Response;
  /** The position of the last message written: the client's cursor once it has read it. */
  sent: number;
  /**
   * Reading from the table rather than live: a stream that resumes, or whose client left more
   * than REALTIME_BUFFER_BYTES unread. Live events pass it by (nothing is kept in memory for it);
   * it reads them from the table as its client reads, and goes live again once it is level with
   * the reader (catchUp).
   */
  catchingUp: boolean;
  ended: boolean;
  /**
   * When a membership event last set the listener's role (membershipChanges' count then): a
   * recheck that began before it read the role as it was, and must not put that back.
   */
  roleSetAt?: number;
}

/** Why a stream ended, in its last message (`event: end`). */
export interface EndReason {
  code: 'NOT_A_MEMBER' | 'SESSION_ENDED' | 'KEY_REVOKED' | 'ORGANIZATION_DELETED' | 'TOO_SLOW' | 'SHUTTING_DOWN';
  message: string;
}

export interface Streams {
  /** Starts the stream on `res` (the headers are sent here); resolves once it is live. */
  open(res: Response, request: StreamRequest): Promise<void>;
  /** Streams held now by one user or key, and in one organization (the limits). */
  heldBy(holder: Holder): number;
  heldIn(organizationId: string): number;
  readonly size: number;
  /** Ends every stream with `retry:` so that clients resume elsewhere at once (SIGTERM), and stops reading. */
  close(): Promise<void>;
}

/** How long the reader keeps polling after the last stream ended, in case another comes. */
const idleStopMs = 60_000;
/** How long a client may take to read a stream's last message before its connection is cut. */
const endGraceMs = 5000;
/** Events read per statement while a stream catches up. */
const catchUpBatch = 200;

export function createStreams({ db, logger, settings }: { db: Database; logger: Logger; settings: RealtimeSettings }): Streams {
  const byOrganization = new Map<string, Set<Stream>>();
  const byHolder = new Map<string, number>();
  let size = 0;
  let closing = false;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;

  const holderKey = (holder: Holder) => (holder.kind === 'session' ? `user:${holder.userId}` : `key:${holder.keyId}`);

  const reader = createStreamReader({ db, logger, pollMs: settings.pollMs, onEvents: fanOut });

  /**
   * One batch, in position order, to every stream of each event's organization. Each stream's
   * socket is corked for the batch: its messages leave in one write, not one system call each
   * (under a heavy write load a batch holds tens of events; bench/realtime.mjs).
   */
  function fanOut(events: PositionedEvent[]) {
    const corked = new Set<NonNullable<Response['socket']>>();
    try {
      deliverBatch(events, corked);
    } finally {
      for (const socket of corked) socket.uncork();
    }
  }

  function deliverBatch(events: PositionedEvent[], corked: Set<NonNullable<Response['socket']>>) {
    for (const positioned of events) {
      const { event } = positioned;
      const streams = byOrganization.get(event.organizationId);
      if (!streams) continue;
      if (event.type === 'organization.deleted') {
        // A Set may lose entries while it is iterated (end() forgets each stream): no copy needed.
        for (const stream of streams) end(stream, { code: 'ORGANIZATION_DELETED', message: 'The organization was deleted' });
        continue;
      }
      if (event.entity === 'member') membershipChanged(streams, event);
      for (const stream of streams) {
        if (stream.catchingUp) continue;
        const socket = stream.res.socket;
        if (socket && !corked.has(socket)) {
          socket.cork();
          corked.add(socket);
        }
        deliver(stream, positioned);
      }
    }
  }

  /** How many membership events have set a role so far: what a recheck compares with (roleSetAt). */
  let membershipChanges = 0;

  /** A member's role changed or they left: their streams judge what follows with the new role, or end. */
  function membershipChanged(streams: Set<Stream>, event: StreamedEvent) {
    const member = event.data.record as { userId?: string; role?: Role } | undefined;
    if (!member?.userId) return;
    for (const stream of streams) {
      if (stream.listener.userId !== member.userId) continue;
      if (event.type === 'member.deleted') end(stream, { code: 'NOT_A_MEMBER', message: 'You are no longer a member of this organization' });
      else if (member.role) {
        stream.listener.role = member.role;
        stream.roleSetAt = ++membershipChanges;
      }
    }
  }

  /** Each view of an event as a message, written once for all the streams that get that view. */
  const messages = new WeakMap<object, string>();

  function deliver(stream: Stream, { position, event }: PositionedEvent) {
    if (position <= stream.sent) return;
    const visible = visibleEvent(event, stream.interests, stream.listener);
    if (!visible) return;
    let message = messages.get(visible);
    if (message === undefined) messages.set(visible, (message = `id: ${position}\nevent: ${visible.type}\ndata: ${JSON.stringify(visible)}\n\n`));
    write(stream, position, message);
  }

  /** Writes a message to the client; a live stream whose client left REALTIME_BUFFER_BYTES unread falls behind (catchUp). */
  function write(stream: Stream, position: number, text: string) {
    if (stream.ended) return;
    stream.res.write(text);
    stream.sent = position;
    if (!stream.catchingUp && stream.res.writableLength > settings.bufferBytes) void catchUp(stream);
  }

  /**
   * Resolves true once the client has read what waits (at once if little does), false if the
   * stream ended meanwhile: a client that reads nothing for REALTIME_DRAIN_MS is ended (it can
   * resume with its Last-Event-ID), and no other stream waits for it.
   */
  function drained(stream: Stream): Promise<boolean> {
    if (stream.ended) return Promise.resolve(false);
    if (stream.res.writableLength <= settings.bufferBytes) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        stream.res.off('drain', onDrain);
        stream.res.off('close', onClose);
        resolve(ok && !stream.ended);
      };
      const onDrain = () => done(true);
      const onClose = () => done(false);
      const timer = setTimeout(() => {
        end(stream, { code: 'TOO_SLOW', message: `This stream was ended: its client left more than ${settings.bufferBytes} bytes unread for ${settings.drainMs} ms. Reconnect with Last-Event-ID to resume.` });
        done(false);
      }, settings.drainMs);
      stream.res.once('drain', onDrain);
      stream.res.once('close', onClose);
    });
  }

  /**
   * Reads what the stream has not been sent from the table, as fast as its client reads, until it
   * is level with the reader's head; then it is live again. The check and the switch happen with
   * no wait between them, so no batch of the reader falls between the two.
   */
  async function catchUp(stream: Stream) {
    stream.catchingUp = true;
    let through = stream.sent;
    try {
      for (;;) {
        if (!(await drained(stream))) return;
        if (through >= reader.head) {
          stream.catchingUp = false;
          return;
        }
        const upTo = reader.head;
        const batch = await readEvents(db, through, catchUpBatch, { organizationId: stream.organizationId, upTo });
        for (const positioned of batch) {
          deliver(stream, positioned);
          if (!(await drained(stream))) return;
        }
        through = batch.length < catchUpBatch ? upTo : batch.at(-1)!.position;
      }
    } catch (error) {
      logger.warn({ err: (error as Error).message }, 'realtime: could not catch a stream up; it ends, and its client resumes');
      end(stream, { code: 'SHUTTING_DOWN', message: 'This stream could not be caught up: reconnect with Last-Event-ID to resume' }, 1000);
    }
  }

  function end(stream: Stream, reason: EndReason, retryMs?: number) {
    if (stream.ended) return;
    stream.ended = true;
    forget(stream);
    const retry = retryMs === undefined ? '' : `retry: ${retryMs}\n`;
    if (!stream.res.writableEnded && !stream.res.destroyed) {
      const socket = stream.res.socket;
      stream.res.end(`${retry}event: end\ndata: ${JSON.stringify(reason)}\n\n`);
      // A client that does not read even that loses its connection.
      setTimeout(() => socket?.destroy(), endGraceMs).unref();
    }
    if (reason.code !== 'SHUTTING_DOWN') logger.info({ organizationId: stream.organizationId, reason: reason.code }, 'realtime: stream ended');
  }

  function forget(stream: Stream) {
    const streams = byOrganization.get(stream.organizationId);
    if (!streams?.delete(stream)) return;
    if (streams.size === 0) byOrganization.delete(stream.organizationId);
    const key = holderKey(stream.holder);
    const held = (byHolder.get(key) ?? 1) - 1;
    if (held === 0) byHolder.delete(key);
    else byHolder.set(key, held);
    size--;
    if (size === 0 && !closing) {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => void reader.stop(), idleStopMs);
      idleTimer.unref();
    }
  }

  /** Every stream's session (and membership) or machine key, checked again: a revoked one ends within REALTIME_RECHECK_MS. */
  async function recheck() {
    // A role change delivered while the statement below runs is newer than what it reads.
    const startedAt = membershipChanges;
    const all = [...byOrganization.values()].flatMap((streams) => [...streams]);
    const sessions = all.filter((stream) => stream.holder.kind === 'session');
    if (sessions.length > 0) {
      const pairs = [...new Map(sessions.map((stream) => [`${(stream.holder as { sessionId: string }).sessionId} ${stream.organizationId}`, stream])).values()];
      const { rows } = await db.query<{ sessionId: string; organizationId: string; role: Role | null }>(
        `SELECT x."sessionId", x."organizationId", m."role"
           FROM unnest($1::uuid[], $2::uuid[]) AS x("sessionId", "organizationId")
           JOIN "session" s ON s."id" = x."sessionId" AND s."expiresAt" > now()
           LEFT JOIN "member" m ON m."userId" = s."userId" AND m."organizationId" = x."organizationId"`,
        [pairs.map((stream) => (stream.holder as { sessionId: string }).sessionId), pairs.map((stream) => stream.organizationId)],
      );
      const found = new Map(rows.map((row) => [`${row.sessionId} ${row.organizationId}`, row.role]));
      for (const stream of sessions) {
        const role = found.get(`${(stream.holder as { sessionId: string }).sessionId} ${stream.organizationId}`);
        if (role === undefined) end(stream, { code: 'SESSION_ENDED', message: 'Your session has ended; sign in again' });
        else if (role === null) end(stream, { code: 'NOT_A_MEMBER', message: 'You are no longer a member of this organization' });
        else if ((stream.roleSetAt ?? 0) <= startedAt) stream.listener.role = role;
      }
    }
    // One statement per key, organization and entity, however many streams the key holds.
    const checked = new Map<string, MachineKeyRow | undefined>();
    for (const stream of all.filter((candidate) => candidate.holder.kind === 'key')) {
      const { hashedKey } = stream.holder as { hashedKey: string };
      for (const entity of new Set(stream.interests.map((interest) => interest.entity))) {
        if (stream.ended) break;
        const asked = `${hashedKey} ${stream.organizationId} ${entity}`;
        if (!checked.has(asked)) {
          const statement = machineKeyStatement(hashedKey, stream.organizationId, { entity, operation: 'list' }, false);
          checked.set(asked, (await db.query<MachineKeyRow>(statement.text, statement.params)).rows[0]);
        }
        const found = checked.get(asked);
        const outcome = found?.outcome;
        // A quota is spent by requests, not by a stream that is already open.
        if (outcome === 'ok' || outcome === 'quota-exhausted' || outcome === 'quota-uncharged') stream.listener.role = found!.role as Role;
        else end(stream, { code: 'KEY_REVOKED', message: outcome === undefined ? 'This machine key was revoked' : `This machine key may no longer list ${entity} (${outcome})` });
      }
    }
  }

  const recheckTimer = setInterval(() => {
    if (size > 0) recheck().catch((error) => logger.warn({ err: (error as Error).message }, 'realtime: could not check the streams\' sessions and keys again'));
  }, settings.recheckMs);
  recheckTimer.unref();

  // A comment line keeps proxies from closing an idle stream; its `id:` moves the client's cursor
  // past events it was not shown, so that a resume does not read them again.
  const heartbeatTimer = setInterval(() => {
    for (const streams of byOrganization.values()) {
      for (const stream of streams) if (!stream.catchingUp) write(stream, Math.max(stream.sent, reader.head), `: keep-alive\nid: ${Math.max(stream.sent, reader.head)}\n\n`);
    }
  }, settings.heartbeatMs);
  heartbeatTimer.unref();

  return {
    get size() {
      return size;
    },
    heldBy: (holder) => byHolder.get(holderKey(holder)) ?? 0,
    heldIn: (organizationId) => byOrganization.get(organizationId)?.size ?? 0,
    async open(res, request) {
      clearTimeout(idleTimer);
      await reader.start();
      const resuming = request.resumeAfter !== undefined && request.resumeAfter < reader.head;
      // From the client's cursor (one ahead of this instance's reader: it has that much already).
      const stream: Stream = { ...request, listener: { ...request.listener }, res, ended: false, catchingUp: resuming, sent: request.resumeAfter ?? reader.head };
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        // nginx passes the stream on as it comes (docs/deploy.md).
        'X-Accel-Buffering': 'no',
        // A stream is its connection's last answer: once it ends, the connection closes.
        Connection: 'close',
      });
      // Sent at once: a proxy and the client see the stream open before the first event.
      res.write(`retry: 1000\n: stream of organization ${request.organizationId}\n\n`);
      res.on('close', () => {
        stream.ended = true;
        forget(stream);
      });
      let streams = byOrganization.get(request.organizationId);
      if (!streams) byOrganization.set(request.organizationId, (streams = new Set()));
      streams.add(stream);
      byHolder.set(holderKey(request.holder), (byHolder.get(holderKey(request.holder)) ?? 0) + 1);
      size++;
      if (!resuming) {
        write(stream, stream.sent, `id: ${stream.sent}\n\n`);
        return;
      }
      const { oldest } = await streamBounds(db);
      if (stream.sent < oldest - 1) {
        // Older than the events kept: what happened since is gone. The client reloads, and the
        // stream goes on from now (its cursor moves there with this message).
        stream.catchingUp = false;
        const now = reader.head;
        write(stream, now, `id: ${now}\nevent: reset\ndata: ${JSON.stringify({ code: 'CURSOR_EXPIRED', message: 'Events since your Last-Event-ID are no longer kept (EVENTS_RETENTION_DAYS): reload, and the stream goes on from now' })}\n\n`);
        return;
      }
      await catchUp(stream);
    },
    async close() {
      closing = true;
      clearInterval(recheckTimer);
      clearInterval(heartbeatTimer);
      clearTimeout(idleTimer);
      for (const streams of [...byOrganization.values()]) {
        for (const stream of [...streams]) end(stream, { code: 'SHUTTING_DOWN', message: 'This instance is stopping: reconnect (with Last-Event-ID) to resume on another' }, 250);
      }
      await reader.stop();
    },
  };
}
