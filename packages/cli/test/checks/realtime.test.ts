import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl, describeProbeBreakages, verifyProject, type VerifyRun } from '../support/check-cycle.js';
import { runCli } from '../support/cli.js';
import { breakFile, createResources, healthyEnv } from '../support/example-copies.js';

const byId = (run: VerifyRun, id: string) => run.report.checks.find((result) => result.id === id)!;

const { stage } = describeProbeBreakages('realtime', [
  {
    name: 'streams that never deliver an event (src/realtime/streams.ts edited)',
    breakFiles: (dir) => breakFile(dir, 'src/realtime/streams.ts', '    if (!visible) return;', '    if (!visible || true) return;'),
    fails: ['realtime'],
    hint: /^each instance reads new events from the database/,
  },
]);

describe.runIf(adminUrl)('realtime: the message of a change that does not arrive', () => {
  it('names the entity, the route it was made through and the stream', () => {
    const { verify } = stage('streams that never deliver an event (src/realtime/streams.ts edited)');
    expect(byId(verify, 'realtime').message).toBe('the Project created through POST /Projects did not reach GET /realtime?entity=Project within 5 s');
  });
});

describe.runIf(adminUrl)('realtime: backends it cannot check', () => {
  const resources = createResources({ adminUrl, name: 'realtime' });
  let healthy: VerifyRun;
  let withoutStreams: VerifyRun;
  let withoutEvents: VerifyRun;
  beforeAll(async () => {
    const run = async (change?: (dir: string) => void) => {
      const dir = resources.copyOfExample(healthyEnv);
      change?.(dir);
      return verifyProject(dir, await resources.startBackend(dir));
    };
    [healthy, withoutStreams, withoutEvents] = await Promise.all([
      run(),
      // A project from before live streams: no GET /realtime, in the app or its document.
      run((dir) => {
        breakFile(dir, 'src/app.ts', "  app.use('/realtime', realtimeRouter({ config, db, auth, streams }));\n");
        breakFile(dir, 'src/app.ts', '    registerRealtimeRoutes(registry);\n');
      }),
      // No entity of its own whose changes are events.
      run((dir) => {
        breakFile(dir, 'authstrap.schema.ts', '    Project: {\n', '    Project: {\n      events: false,\n');
        breakFile(dir, 'authstrap.schema.ts', '    Task: {\n', '    Task: {\n      events: false,\n');
        const generate = runCli(['generate'], dir);
        if (generate.status !== 0) throw new Error(`generate failed:\n${generate.output}`);
      }),
    ]);
  }, 180_000);
  afterAll(resources.cleanup, 60_000);

  it('passes on the example, naming the event and the stream', () => {
    expect(byId(healthy, 'realtime'), healthy.output).toMatchObject({ status: 'pass', message: expect.stringMatching(/^project\.created reached GET \/realtime\?entity=Project in \d+ ms$/) });
  });

  it('skips a backend without GET /realtime, saying so, and verify still passes', () => {
    expect(byId(withoutStreams, 'realtime'), withoutStreams.output).toMatchObject({ status: 'skip', message: expect.stringContaining('the backend has no live streams (GET /realtime)') });
    expect(withoutStreams.report.checks.filter((result) => result.status === 'fail'), withoutStreams.output).toEqual([]);
    expect(withoutStreams.status).toBe(0);
  });

  it('skips a backend none of whose entities streams its changes', () => {
    expect(byId(withoutEvents, 'realtime'), withoutEvents.output).toMatchObject({ status: 'skip', message: expect.stringContaining('no entity whose changes are streamed') });
    expect(withoutEvents.report.checks.filter((result) => result.status === 'fail'), withoutEvents.output).toEqual([]);
  });
});
