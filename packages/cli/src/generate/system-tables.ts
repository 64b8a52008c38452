import type { Table } from './table-model.js';

/**
 * Tables the backend's own machinery keeps beside the entities' tables, in projects with auth.
 * They are part of the database model, so `generate` creates them (and a project made before they
 * existed gets them in its next migration); they have no routes, no OpenAPI and no client.
 */

/**
 * The transactional outbox (src/outbox/outbox.ts): a message is written here in the same
 * transaction as the change that causes it, and delivered after commit by a worker in every
 * instance. `channel` says who delivers it ('mail'); `payload` is what that channel needs.
 */
export const outboxTable: Table = {
  name: 'authstrap_outbox',
  columns: [
    { name: 'id', type: 'uuid', nullable: false, default: 'gen_random_uuid()', primaryKey: true },
    { name: 'channel', type: 'text', nullable: false },
    { name: 'payload', type: 'jsonb', nullable: false },
    { name: 'status', type: 'text', nullable: false, default: "'pending'" },
    { name: 'attempts', type: 'integer', nullable: false, default: '0' },
    { name: 'nextAttemptAt', type: 'timestamptz', nullable: false, default: 'now()' },
    { name: 'lockedUntil', type: 'timestamptz', nullable: true },
    { name: 'lastError', type: 'text', nullable: true },
    { name: 'sentAt', type: 'timestamptz', nullable: true },
    { name: 'createdAt', type: 'timestamptz', nullable: false, default: 'now()' },
  ],
  constraints: [{ name: 'authstrap_outbox_status_check', definition: "CHECK (\"status\" IN ('pending', 'sent', 'failed'))" }],
  // The workers' one question: which pending messages are due?
  indexes: [{ name: 'authstrap_outbox_status_nextAttemptAt_idx', columns: ['status', 'nextAttemptAt'] }],
  dependsOn: [],
};

export const systemTables: Table[] = [outboxTable];
