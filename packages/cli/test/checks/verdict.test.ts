import { describe, expect, it } from 'vitest';
import type { Check, Finding, Outcome } from '../../src/checks/check.js';
import { checks } from '../../src/checks/registry.js';
import { verdicts, type CheckParts } from '../../src/checks/verdict.js';

/** verify's verdict on a check from its two parts, and the hint of a failure. */

const repairable: Check = { id: 'module-wiring', title: 'Mounted', examine: () => ({ status: 'pass', message: '' }), probe: { needs: 'http', run: async () => ({ status: 'pass', message: '' }) } };
const probeOnly: Check = { id: 'tenant-isolation', title: 'Isolated', probe: { needs: 'http', run: async () => ({ status: 'pass', message: '' }) }, causes: ['module-wiring'], advice: 'check the code of the collection named' };

const pass = (message: string): Outcome => ({ status: 'pass', message });
const fail = (message: string): Outcome => ({ status: 'fail', message });
const skip = (message: string): Outcome => ({ status: 'skip', message });
const withRepair = (message: string): Finding => ({ ...fail(message), repair: { summary: 'write 1 file (src/app.ts)', files: [], sql: [] } });

const judge = (parts: Record<string, CheckParts>) => Object.fromEntries(verdicts([repairable, probeOnly], new Map(Object.entries(parts))).map((result) => [result.id, result]));

describe('verify: a verdict from the parts', () => {
  it('passes only when every part ran and passed, saying what each found', () => {
    expect(judge({ 'module-wiring': { examined: pass('src/app.ts mounts it'), probed: pass('9 collections answer') } })['module-wiring']).toEqual({
      id: 'module-wiring',
      title: 'Mounted',
      status: 'pass',
      message: 'src/app.ts mounts it; 9 collections answer',
    });
  });

  it('is skipped, never passed, when a part could not run', () => {
    expect(judge({ 'module-wiring': { examined: pass('src/app.ts mounts it'), probed: skip('the server does not answer') } })['module-wiring']).toMatchObject({
      status: 'skip',
      message: 'src/app.ts mounts it; the server does not answer',
    });
  });

  it('fails when either part fails, with the failures only, and names fix when its examine has the repair', () => {
    expect(judge({ 'module-wiring': { examined: withRepair('src/app.ts does not mount it'), probed: fail('GET /Users 404') } })['module-wiring']).toEqual({
      id: 'module-wiring',
      title: 'Mounted',
      status: 'fail',
      message: 'src/app.ts does not mount it; GET /Users 404',
      fix: 'authstrap fix repairs it: write 1 file (src/app.ts)',
    });
  });

  it("names a cause only when that check failed in this run; otherwise gives the check's advice", () => {
    const caused = judge({ 'module-wiring': { examined: withRepair('not mounted') }, 'tenant-isolation': { probed: fail('GET /Users 404') } });
    expect(caused['tenant-isolation']!.fix).toBe('caused by module-wiring: authstrap fix repairs module-wiring');
    const unexplained = judge({ 'module-wiring': { examined: pass('mounted'), probed: pass('answers') }, 'tenant-isolation': { probed: fail("GET /Projects lists Alice's record") } });
    expect(unexplained['tenant-isolation']!.fix).toBe('check the code of the collection named');
  });

  it("prefers what a failed part says to do over the check's advice", () => {
    expect(judge({ 'tenant-isolation': { probed: { ...fail('the key was refused'), fix: 'pass the right key' } } })['tenant-isolation']!.fix).toBe('pass the right key');
  });
});

describe('the registry', () => {
  it('has one check per id, each with something to run, and causes that are checks of it', () => {
    const ids = checks.map((check) => check.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const check of checks) {
      expect(check.examine ?? check.probe, check.id).toBeDefined();
      for (const cause of check.causes ?? []) expect(ids, `${check.id} names ${cause}`).toContain(cause);
    }
  });
});
