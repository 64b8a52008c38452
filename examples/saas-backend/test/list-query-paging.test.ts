import { describe, expect, it } from 'vitest';
import { projectListSpec } from '../src/generated/Project/project.repository.js';
import { parseListQuery } from '../src/http/list-query.js';

/**
 * parseListQuery reads the query strings most lists come with (`limit`, `page`, nothing else) on
 * a path of its own, without the schema (issue 32). That path must make exactly what the schema
 * makes: the same values, the same keys in the same order (one hidden class), the same errors.
 * `order=desc` is the default written out: it sends the same query through the schema.
 */
const throughSchema = (query: Record<string, string>) => parseListQuery({ ...query, order: 'desc' }, projectListSpec);
const outcome = (read: () => unknown) => {
  try {
    return { value: read() };
  } catch (error) {
    const { status, message, details } = error as { status?: number; message: string; details?: unknown };
    return { error: { status, message, details } };
  }
};

describe('the paging-only query string', () => {
  const queries: Record<string, string>[] = [
    {},
    { limit: '20' },
    { limit: '1' },
    { limit: '0' },
    { limit: '100' },
    { limit: '101' },
    { limit: '500' },
    { limit: '007' },
    { limit: '999999' },
    { page: '1' },
    { page: '3', limit: '5' },
    { limit: '5', page: '3' },
    { page: '999999' },
    { page: '0' },
    { page: '00' },
    { limit: '1234567' },
    { page: '12345678901234567890' },
    { limit: '-5' },
    { limit: '1.5' },
    { limit: '' },
    { page: 'abc' },
  ];

  it.each(queries.map((query) => [new URLSearchParams(query).toString() || '(none)', query] as const))('%s: what the schema makes of it', (_name, query) => {
    const fast = outcome(() => parseListQuery(query, projectListSpec));
    const slow = outcome(() => throughSchema(query));
    expect(fast).toEqual(slow);
    if ('value' in fast && 'value' in slow) expect(Object.keys(fast.value as object)).toEqual(Object.keys(slow.value as object));
  });

  it('takes its own path only where it may: a filter, a sort or a repeated value go through the schema', () => {
    expect(parseListQuery({ limit: '5', status: 'active' }, projectListSpec).filters).toEqual([{ field: 'status', operator: 'eq', value: 'active' }]);
    expect(parseListQuery({ limit: '5', sort: 'name' }, projectListSpec).sort).toBe('name');
    expect(() => parseListQuery({ limit: ['5', '6'] }, projectListSpec)).toThrow(/more than once/);
    expect(parseListQuery({ page: '2', limit: '10' }, projectListSpec)).toMatchObject({ page: 2, limit: 10, sort: 'createdAt', order: 'desc', filters: [], where: [] });
  });
});
