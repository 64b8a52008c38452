import type { Logger } from 'pino';

/**
 * A worker every instance runs, which looks for work every `pollMs` (the domains' checks, the
 * single sign-on refresh): `round` claims and does what is due, a batch at a time, until nothing
 * is left or `stopped()` says to end. One round at a time per instance; what makes two instances
 * never do the same item is the round's claim (`FOR UPDATE SKIP LOCKED`), not this.
 */
export interface PollingWorker<Done> {
  /** One round now (the tests call it with their clock); answers what it did. */
  runOnce(): Promise<Done>;
  /** Every `pollMs` from now on (nothing when it is 0). */
  start(): void;
  /** No new round; the one under way finishes. */
  stop(): Promise<void>;
}

export function pollingWorker<Done>({ round, pollMs, logger, what }: { round: (stopped: () => boolean) => Promise<Done>; pollMs: number; logger: Logger; what: string }): PollingWorker<Done> {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<Done> | undefined;
  let stopped = false;

  const runOnce = () => {
    const run = round(() => stopped).finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };

  const tick = () => {
    timer = setTimeout(async () => {
      try {
        if (!running) await runOnce();
      } catch (error) {
        logger.warn({ err: (error as Error)?.message }, `could not look for ${what}; trying again later`);
      }
      if (!stopped) tick();
    }, pollMs);
    timer.unref();
  };

  return {
    runOnce,
    start() {
      if (pollMs > 0) tick();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
