import type { Logger } from 'pino';
import type { Database } from './database.js';

/**
 * A clean-up that every instance runs hourly (the deletes of two instances overlap harmlessly):
 * one SECURITY DEFINER function of the migrations, which deletes what requests may not and
 * answers how many rows it deleted (or, with `done` and `verb`, another hourly upkeep of the same
 * kind: the operators' counts per day, which answers how many days it counted). The first run comes a minute after the start, not during it
 * (the start's own statements come first); a failure is logged and tried again the next hour.
 */
export function startHourlyPrune({ db, logger, statement, params = [], what, done = 'deleted', verb = 'delete' }: { db: Database; logger: Logger; statement: string; params?: unknown[]; what: string; done?: string; verb?: string }) {
  const prune = async () => {
    try {
      const { rows } = await db.query<{ pruned: number }>(statement, params);
      if (rows[0]!.pruned > 0) logger.info({ pruned: rows[0]!.pruned }, `${what} ${done}`);
    } catch (error) {
      logger.warn({ err: (error as Error)?.message }, `could not ${verb} ${what}; trying again later`);
    }
  };
  const first = setTimeout(prune, 60_000);
  const timer = setInterval(prune, 60 * 60 * 1000);
  first.unref();
  timer.unref();
  return {
    prune,
    stop() {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
