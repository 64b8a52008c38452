import { Router } from 'express';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { AuthService } from '../auth/auth-service.js';

/**
 * Your own routes. This folder is yours: `authstrap generate` creates it once and never writes
 * to it again. Routes here are mounted before the generated ones, so they can also replace one.
 *
 * A route that reads or writes tenant rows goes behind `tenantScoped` and runs its statements
 * through `asCaller` (both from src/generated/guards/tenant.guard.ts): they then act in the
 * caller's organization, as the caller, and PostgreSQL's row-level security sees to it that a
 * statement which forgets its organization filter still sees no other organization's rows:
 *
 *   const reports = Router();
 *   reports.get('/overdue', async (req, res) => {
 *     const { rows } = await asCaller(deps.db, req).query('SELECT count(*)::int AS "count" FROM "Task" WHERE "dueAt" < now()');
 *     sendData(res, rows[0]);
 *   });
 *   router.use('/reports', ...tenantScoped(deps, reports));
 *
 * `deps.db.query` on its own runs outside any organization: it sees no tenant rows at all.
 */
export function extensionRouter(_deps: { config: Config; db: Database; auth: AuthService }): Router {
  const router = Router();
  return router;
}
