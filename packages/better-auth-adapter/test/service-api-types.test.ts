import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds, serviceApiKey } from '../../../examples/saas-backend/test/support/backend.js';
import type { AuthstrapSchemaPart } from '../src/schema.js';
import { schemaFollowingBackend } from './support/schema-following-backend.js';

/**
 * The service API's `join` and `where` with every pair of field types: a comparison PostgreSQL
 * cannot make (`uuid = timestamptz`) is a 400 that names the fields, never a 500. One
 * service-only entity with a field of every type (and a second row to compare) is generated
 * into a copy of the example, as a Better Auth plugin's model would be.
 */
const part: AuthstrapSchemaPart = {
  $comment: 'every field type, for the service API type tests',
  entities: {
    Typed: {
      serviceOnly: true,
      fields: {
        label: { type: 'string', nullable: true },
        note: { type: 'text', nullable: true },
        count: { type: 'integer', nullable: true },
        ratio: { type: 'number', nullable: true },
        flag: { type: 'boolean', nullable: true },
        at: { type: 'datetime', nullable: true },
        ref: { type: 'uuid', nullable: true },
        kind: { type: 'enum', values: ['a', 'b'], nullable: true },
        data: { type: 'json', nullable: true },
      },
    },
  },
};

/** The fields a where or join may name: every one but the json field, and the built-in id and timestamps. */
const fields = ['id', 'createdAt', 'label', 'note', 'count', 'ratio', 'flag', 'at', 'ref', 'kind'];
const sameKind = (a: string, b: string) => {
  const kindOf: Record<string, string> = { id: 'uuid', ref: 'uuid', createdAt: 'date', at: 'date', label: 'text', note: 'text', kind: 'text', count: 'number', ratio: 'number', flag: 'boolean' };
  return kindOf[a] === kindOf[b];
};

const values: unknown[] = [
  'text', '', 0, 1.5, -7, 2 ** 31, 1e300, true, false, null, [], ['a'], [1], [true], [null], {}, '2024-02-29T12:00:00.000Z', '2024-02-30', randomUUID(), 'NaN', 'Infinity',
];
const operators = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'not_in', 'contains', 'starts_with', 'ends_with'];

describe.each(databaseKinds)('the service API with every pair of field types, %s database', (kind) => {
  const backend = schemaFollowingBackend(kind);
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(new URL(path, backend.url), {
      method,
      headers: { authorization: `Bearer ${serviceApiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { data?: unknown; error?: { message: string; details?: Record<string, string> } } };
  };

  beforeAll(async () => {
    await backend.migrateTo(part);
    for (const row of [
      { label: 'one', note: 'first', count: 1, ratio: 0.5, flag: true, at: '2024-01-01T00:00:00.000Z', ref: randomUUID(), kind: 'a', data: { x: 1 } },
      { label: 'two', count: 2, ratio: 2, flag: false, kind: 'b' },
    ]) {
      expect((await call('POST', '/Typeds', row)).status).toBe(201);
    }
  }, 120_000);
  afterAll(() => backend.stop());

  it.each(fields.flatMap((from) => fields.map((to) => [from, to] as const)))('join from %s to %s: a 200 for one type, else a 400 naming both', async (from, to) => {
    const join = { other: { entity: 'Typed', from, to, relation: 'one-to-many' } };
    const answer = await call('GET', `/Typeds?join=${encodeURIComponent(JSON.stringify(join))}`);
    if (sameKind(from, to)) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    } else {
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect(answer.body.error!.details!.join).toContain(`Typed.${from} (`);
      expect(answer.body.error!.details!.join).toContain(`Typed.${to} (`);
    }
  });

  it.each(fields)('where on %s, with every operator and value type: a 200 or a 400 naming it, never a 500', async (field) => {
    const failures: string[] = [];
    for (const operator of operators) {
      for (const value of values) {
        const where = [{ field, operator, value }];
        for (const [method, path] of [['GET', '/Typeds'], ['POST', '/Typeds/consume-one'], ['PATCH', '/Typeds']] as const) {
          // Writes that would succeed change nothing: a where that also matches no row.
          const guarded = method === 'GET' ? where : [...where, { field: 'label', value: 'no such row' }];
          const answer = await call(method, `${path}?where=${encodeURIComponent(JSON.stringify(guarded))}`, method === 'PATCH' ? { note: 'changed' } : undefined);
          const named = answer.status === 400 && (answer.body.error?.details?.where ?? '').includes(field);
          if (answer.status !== 200 && !named) failures.push(`${method} ${operator} ${JSON.stringify(value)}: ${answer.status} ${JSON.stringify(answer.body.error)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    // Nothing was written by the guarded writes.
    const rows = await call('GET', '/Typeds?limit=10');
    expect((rows.body.data as { note: string | null }[]).map((row) => row.note).sort()).toEqual(['first', null]);
  });
});
