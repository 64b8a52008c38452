import type { Request } from 'express';
import { maxResults } from './discovery.js';
import { ScimError } from './errors.js';

/**
 * A list request's paging and filter (RFC 7644 3.4.2): `startIndex` (from 1; below 1 read as 1) and `count` (100 by default, at most 200), and the filter.
 */
export function listQueryOf(query: Request['query']): { filter?: string; startIndex: number; count: number } {
  const single = (name: string) => {
    const value = query[name];
    if (Array.isArray(value)) throw new ScimError(400, 'invalidValue', `Give ${name} once`);
    return typeof value === 'string' ? value : undefined;
  };
  const whole = (name: string, fallback: number) => {
    const text = single(name);
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isInteger(value)) throw new ScimError(400, 'invalidValue', `${name} must be a whole number`);
    return value;
  };
  const filter = single('filter');
  return { filter: filter?.trim() ? filter : undefined, startIndex: Math.max(1, whole('startIndex', 1)), count: Math.min(maxResults, Math.max(0, whole('count', 100))) };
}

