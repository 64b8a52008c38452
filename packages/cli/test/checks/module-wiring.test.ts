import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { appMount } from '../../src/checks/module-wiring.js';
import { describeRepairCycle } from '../support/check-cycle.js';
import { exampleDir } from '../support/cli.js';
import { breakFile } from '../support/example-copies.js';

const app = fs.readFileSync(path.join(exampleDir, 'src/app.ts'), 'utf8');
const mount = '  app.use(generatedRouter({ db, auth, config, transactions }));\n';
const withMount = (to: string, text = app) => {
  if (!text.includes(mount)) throw new Error('src/app.ts of the example no longer mounts generatedRouter as this test expects');
  return text.replace(mount, to);
};
/** The mount moved to the end of createApp, after its `return app;`. */
const afterReturn = (text: string) => withMount('', text).replace('  return app;\n}', `  return app;\n${mount}}`);

describe('module-wiring reads src/app.ts as syntax', () => {
  it("finds the example's mount", () => {
    expect(appMount(app)).toEqual({ mounted: true });
  });

  it.each([
    ['deleted', withMount(''), 'src/app.ts does not mount generatedRouter'],
    ['commented out', withMount(`  // ${mount.trimStart()}`), 'src/app.ts does not mount generatedRouter'],
    ['after a return', afterReturn(app), 'src/app.ts mounts generatedRouter only after a return, where it never runs'],
    ['after the 404 handler', withMount('').replace('  app.use(unknownRoute);\n', `  app.use(unknownRoute);\n${mount}`), 'src/app.ts mounts generatedRouter after the 404 handler (app.use(unknownRoute)), so no request reaches it'],
  ])('%s: no mount, and the repair gives back the example file byte for byte', (_name, broken, problem) => {
    const found = appMount(broken);
    expect(found).toMatchObject({ mounted: false, problem });
    expect(found.mounted === false && found.repaired).toBe(app);
  });

  it('in a block comment: no mount; the repair mounts it where it was', () => {
    const found = appMount(withMount(`  /* ${mount.trim()} */\n`));
    expect(found).toMatchObject({ mounted: false, problem: 'src/app.ts does not mount generatedRouter' });
    expect(found.mounted === false && found.repaired).toContain(`  app.use(extensionRouter({ config, db, auth }));\n${mount}  /* ${mount.trim()} */\n`);
  });

  it('without its import: the repair imports it after the other imports, and mounts it once', () => {
    const found = appMount(app.replace("import { generatedRouter } from './generated/index.js';\n", ''));
    expect(found).toMatchObject({ mounted: false, problem: "src/app.ts mounts generatedRouter without importing it from './generated/index.js'" });
    const repaired = found.mounted === false ? found.repaired! : '';
    expect(repaired).toContain("import { docsRouter } from './openapi/docs.js';\nimport { generatedRouter } from './generated/index.js';\n");
    expect(repaired.split('app.use(generatedRouter(')).toHaveLength(2);
    expect(appMount(repaired)).toEqual({ mounted: true });
  });

  it('accepts the router imported under another name', () => {
    const renamed = app.replace('import { generatedRouter } from', 'import { generatedRouter as routes } from').replace('app.use(generatedRouter(', 'app.use(routes(');
    expect(appMount(renamed)).toEqual({ mounted: true });
  });

  it('leaves a file without a reachable 404 handler to be repaired by hand', () => {
    const noHandler = withMount('').replace('  app.use(unknownRoute);\n', '');
    expect(appMount(noHandler)).toEqual({ mounted: false, problem: 'src/app.ts does not mount generatedRouter' });
  });
});

const { stage } = describeRepairCycle('module-wiring', [
  {
    name: 'the mount deleted from src/app.ts',
    planShows: ['--- a/src/app.ts'],
    alsoFailsInVerify: ['auth-endpoints', 'tenant-isolation', 'service-credential'],
    breakFiles: (dir) => breakFile(dir, 'src/app.ts', mount),
  },
  {
    name: 'the mount commented out in src/app.ts',
    planShows: ['--- a/src/app.ts', `-  // ${mount.trim()}`],
    alsoFailsInVerify: ['auth-endpoints', 'tenant-isolation', 'service-credential'],
    breakFiles: (dir) => breakFile(dir, 'src/app.ts', mount, `  // ${mount.trimStart()}`),
  },
  {
    name: 'the mount after the return of createApp',
    planShows: ['--- a/src/app.ts'],
    alsoFailsInVerify: ['auth-endpoints', 'tenant-isolation', 'service-credential'],
    breakFiles: (dir) => fs.writeFileSync(path.join(dir, 'src/app.ts'), afterReturn(app)),
  },
  {
    name: 'src/generated/index.ts without the /Tasks mount',
    planShows: ['--- a/src/generated/index.ts'],
    alsoFailsInVerify: ['tenant-isolation'],
    breakFiles: (dir) => breakFile(dir, 'src/generated/index.ts', "  router.use('/Tasks', ...tenantScoped(deps, taskRouter(deps), 'Task')); // Task\n"),
    async afterRepair(_dir, backend, extra) {
      // Signed out: a mounted /Tasks asks who is calling (401); an unmounted one is unknown (404).
      extra.tasksStatus = (await fetch(`${backend.url}/Tasks`)).status;
    },
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('module-wiring: what verify and fix say', () => {
  it('verify names the collections the running backend does not serve', () => {
    const check = stage('the mount commented out in src/app.ts', 'verifyBefore').report.checks.find((result) => result.id === 'module-wiring')!;
    expect(check.message).toContain('src/app.ts does not mount generatedRouter');
    expect(check.message).toContain('not mounted in the running backend: GET /Users (404');
    expect(check.message).toContain('/Projects/:projectId/Tasks (404');
  });

  it('the repaired src/app.ts is the example file again, byte for byte', () => {
    for (const name of ['the mount deleted from src/app.ts', 'the mount commented out in src/app.ts', 'the mount after the return of createApp']) {
      expect(stage(name, 'treeAfterFirst').get('src/app.ts'), name).toBe(app);
    }
  });

  it('src/generated/index.ts is restored byte for byte, and /Tasks answers again', () => {
    const name = 'src/generated/index.ts without the /Tasks mount';
    expect(stage(name, 'treeAfterFirst').get('src/generated/index.ts')).toBe(fs.readFileSync(path.join(exampleDir, 'src/generated/index.ts'), 'utf8'));
    expect(stage(name, 'extra').tasksStatus).toBe(401);
    expect(stage(name, 'verifyBefore').report.checks.find((result) => result.id === 'module-wiring')!.message).toContain('GET /Tasks (404');
  });
});
