import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { databaseReplication, readReplication, replicationVerdict, type ReplicationFacts } from '../../src/checks/database-replication.js';
import { probeContext } from '../../src/checks/probe-context.js';
import { openDatabase } from '../../src/verify/database.js';
import { httpClient } from '../../src/verify/http.js';
import { postgresBin, startSecondPostgres } from '../../../../examples/saas-backend/test/support/second-postgres.js';

const primary = (standbys: ReplicationFacts['standbys'] = [], synchronousStandbyNames = ''): ReplicationFacts => ({ inRecovery: false, synchronousStandbyNames, standbys });

describe('database-replication: the verdict', () => {
  it('fails a standby, in production or not, naming what to point DATABASE_URL at', () => {
    for (const production of [false, true]) {
      const outcome = replicationVerdict({ inRecovery: true, synchronousStandbyNames: '', standbys: [] }, production);
      expect(outcome.status).toBe('fail');
      expect(outcome.message).toContain('DATABASE_URL');
    }
  });

  it('passes a lone primary outside production and warns in production', () => {
    expect(replicationVerdict(primary(), false)).toMatchObject({ status: 'pass', message: 'a primary, no standby (fine outside production)' });
    expect(replicationVerdict(primary(), true).status).toBe('warn');
  });

  it('names each standby with its state and lag, and warns in production when none is synchronous', () => {
    const standbys = [
      { name: 'pg2', syncState: 'sync', replayLagSeconds: 0.0021 },
      { name: 'pg3', syncState: 'async', replayLagSeconds: null },
    ];
    expect(replicationVerdict(primary(standbys, 'pg2'), true)).toEqual({
      status: 'pass',
      message: 'a primary with 1 synchronous standby and 1 other: pg2 (sync, replay lag 0.002 s), pg3 (async, no lag measured)',
    });
    const asynchronous = replicationVerdict(primary([standbys[1]!]), true);
    expect(asynchronous.status).toBe('warn');
    expect(asynchronous.message).toContain('none synchronous');
    expect(replicationVerdict(primary([standbys[1]!]), false).status).toBe('pass');
  });

  it('warns when the primary waits for synchronous standbys and none is connected', () => {
    expect(replicationVerdict(primary([], '*'), false)).toMatchObject({ status: 'warn', message: expect.stringContaining('writes wait') });
  });
});

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL && fs.existsSync(`${postgresBin}/initdb`))('database-replication: against real servers', () => {
  const probe = async (url: string, nodeEnv?: string) => {
    const db = await openDatabase({ kind: 'postgres', url });
    try {
      const context = { ...probeContext(httpClient('http://127.0.0.1:1'), undefined, nodeEnv), db };
      return { facts: await readReplication(db), outcome: await databaseReplication.probe!.run(context) };
    } finally {
      await db.close();
    }
  };

  it("reads the machine's server as a primary without standbys: a pass, a warning in production", async () => {
    const url = process.env.AUTHSTRAP_TEST_POSTGRES_URL!;
    const { facts, outcome } = await probe(url);
    expect(facts).toEqual({ inRecovery: false, synchronousStandbyNames: '', standbys: [] });
    expect(outcome.status).toBe('pass');
    expect((await probe(url, 'production')).outcome.status).toBe('warn');
  });

  it('fails a server in recovery', async () => {
    const standby = await startSecondPostgres(1, { standby: true });
    try {
      const { facts, outcome } = await probe(standby.url);
      expect(facts.inRecovery).toBe(true);
      expect(outcome.status).toBe('fail');
    } finally {
      await standby.stop();
    }
  });
});
