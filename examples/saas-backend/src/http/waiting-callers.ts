import type { RequestHandler, Response } from 'express';

/**
 * Whether anyone is waiting on this instance now: a caller whose request has arrived and has no
 * answer yet. A directory's sync asks before each of its requests (scim/scim.router.ts,
 * `directoryShare`) and yields while the answer is yes.
 *
 * What counts is a request that reaches `count`, which app.ts mounts after the SCIM router: the
 * directories' own requests never do. Neither does anything else the backend does on a sync's
 * behalf (its request log, the events its writes record, the outbox, webhooks and the live
 * streams they feed): that is background work, not a request, so a sync with nobody else on the
 * instance is never slowed by its own wake. A request stops counting once the head of its answer
 * is written or its connection closes; a live stream writes its head when it opens, so an open
 * stream is nobody waiting.
 *
 * Answered requests are dropped as `anyone` meets them (or when they close): it stops at the first
 * caller still waiting, so it costs a few steps however many streams are open. Nothing is added to
 * the request or the response (app-prototypes.ts: their shape stays Node's).
 */
export interface WaitingCallers {
  /** Counts the request while it waits for its answer. */
  count: RequestHandler;
  /** Whether any counted request is still waiting for the head of its answer. */
  anyone(): boolean;
}

export function waitingCallers(): WaitingCallers {
  const answering = new Set<Response>();
  return {
    count(_req, res, next) {
      answering.add(res);
      res.on('close', () => answering.delete(res));
      next();
    },
    anyone() {
      for (const res of answering) {
        if (!res.headersSent) return true;
        answering.delete(res);
      }
      return false;
    },
  };
}
