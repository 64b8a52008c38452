import { Router } from 'express';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';

/**
 * Your own routes. This folder is yours: `authstrap generate` creates it once and never writes
 * to it again. Routes here are mounted before the generated ones, so they can also replace one.
 */
export function extensionRouter(_deps: { config: Config; db: Database }): Router {
  const router = Router();
  return router;
}
