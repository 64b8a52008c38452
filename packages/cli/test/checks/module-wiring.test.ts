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
const dead = 'src/app.ts mounts generatedRouter only where it never runs (after a return or throw, or in a branch whose condition is always false)';
/** The mount in a branch that never runs, as in issue 40: it builds, and every generated route is 404. */
const ifFalse = `  if (false) {\n  ${mount}  }\n`;
/** The mount moved to the end of createApp, after its `return app;`. */
const afterReturn = (text: string) => withMount('', text).replace('  return app;\n}', `  return app;\n${mount}}`);

describe('module-wiring reads src/app.ts as syntax', () => {
  it("finds the example's mount", () => {
    expect(appMount(app)).toEqual({ mounted: true });
  });

  it.each([
    ['deleted', withMount(''), 'src/app.ts does not mount generatedRouter'],
    ['commented out', withMount(`  // ${mount.trimStart()}`), 'src/app.ts does not mount generatedRouter'],
    ['after a return', afterReturn(app), dead],
    ['in if (false) { ... }', withMount(ifFalse), dead],
    ['in if (0) without braces', withMount(`  if (0) ${mount.trimStart()}`), dead],
    ['in while (false)', withMount(`  while (false) {\n  ${mount}  }\n`), dead],
    ['in for (; !1; )', withMount(`  for (; !1; ) {\n  ${mount}  }\n`), dead],
    ['behind false &&', withMount(`  false && ${mount.trimStart()}`), dead],
    ['behind "" &&, parenthesised', withMount(`  ('' && ${mount.trim().replace(/;$/, '')});\n`), dead],
    ['behind true ||', withMount(`  true || ${mount.trimStart()}`), dead],
    ['behind null ?? (a value is never null)', withMount(`  1 ?? ${mount.trimStart()}`), dead],
    ['in the false branch of true ? ... : ...', withMount(`  true ? undefined : ${mount.trimStart()}`), dead],
    ['in the true branch of 1 === 2 ? ... : ...', withMount(`  1 === 2 ? ${mount.trim().replace(/;$/, '')} : undefined;\n`), dead],
    ['after the 404 handler', withMount('').replace('  app.use(unknownRoute);\n', `  app.use(unknownRoute);\n${mount}`), 'src/app.ts mounts generatedRouter after the 404 handler (app.use(unknownRoute)), so no request reaches it'],
  ])('%s: no mount, and the repair gives back the example file byte for byte', (_name, broken, problem) => {
    const found = appMount(broken);
    expect(found).toMatchObject({ mounted: false, problem });
    expect(found.mounted === false && found.repaired).toBe(app);
  });

  it('in the else of if (true): no mount; the repair mounts it before the 404 handler', () => {
    const found = appMount(withMount(`  if (true) {\n  } else {\n  ${mount}  }\n`));
    expect(found).toMatchObject({ mounted: false, problem: dead });
    expect(appMount(found.mounted === false ? found.repaired! : '')).toEqual({ mounted: true });
  });

  it.each([
    ['if (true) return', '  if (true) return app;\n'],
    ['a throw', "  throw new Error('not yet');\n"],
  ])('after %s, which the 404 handler follows too: no mount, to be repaired by hand', (_name, exit) => {
    const broken = withMount('').replace('  app.use(unknownRoute);\n', `${exit}${mount}  app.use(unknownRoute);\n`);
    expect(appMount(broken)).toEqual({ mounted: false, problem: dead });
  });

  it.each([
    ['a condition read at run time', `  if (process.env.ROUTES !== 'off') {\n  ${mount}  }\n`],
    ['a variable before &&', `  config.nodeEnv && ${mount.trimStart()}`],
    ['an if (true)', `  if (true) {\n  ${mount}  }\n`],
    ['the true branch of a constant ternary', `  1 < 2 ? ${mount.trim().replace(/;$/, '')} : undefined;\n`],
    ['a return inside an if that may not run', `  if (!config) return app;\n${mount}`],
  ])('a mount behind %s is a mount', (_name, text) => {
    expect(appMount(withMount(text))).toEqual({ mounted: true });
  });

  it("a dead mount that shares its statement with another call: the repair mounts it again and keeps that call", () => {
    const broken = withMount(`  false ? ${mount.trim().replace(/;$/, '')} : app.use(extensionRouter({ config, db, auth }));\n`);
    const found = appMount(broken);
    expect(found).toMatchObject({ mounted: false, problem: dead });
    const repaired = found.mounted === false ? found.repaired! : '';
    expect(repaired).toContain(': app.use(extensionRouter({ config, db, auth }));');
    expect(appMount(repaired)).toEqual({ mounted: true });
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
    expect(repaired).toContain("import { docsRouter, registerProbeAndDocsRoutes } from './openapi/docs.js';\nimport { generatedRouter } from './generated/index.js';\n");
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
    alsoFailsInVerify: ['auth-endpoints', 'tenant-isolation', 'realtime', 'service-credential'],
    breakFiles: (dir) => breakFile(dir, 'src/app.ts', mount),
  },
  {
    name: 'the mount commented out in src/app.ts',
    planShows: ['--- a/src/app.ts', `-  // ${mount.trim()}`],
    alsoFailsInVerify: ['auth-endpoints', 'tenant-isolation', 'realtime', 'service-credential'],
    breakFiles: (dir) => breakFile(dir, 'src/app.ts', mount, `  // ${mount.trimStart()}`),
  },
  {
    name: 'the mount after the return of createApp',
    planShows: ['--- a/src/app.ts'],
    alsoFailsInVerify: ['auth-endpoints', 'tenant-isolation', 'realtime', 'service-credential'],
    breakFiles: (dir) => fs.writeFileSync(path.join(dir, 'src/app.ts'), afterReturn(app)),
  },
  {
    name: 'the mount in an if (false) block of src/app.ts',
    planShows: ['--- a/src/app.ts', '-  if (false) {'],
    alsoFailsInVerify: ['auth-endpoints', 'tenant-isolation', 'realtime', 'service-credential'],
    breakFiles: (dir) => breakFile(dir, 'src/app.ts', mount, ifFalse),
    async afterRepair(_dir, backend, extra) {
      extra.projectsStatus = (await fetch(`${backend.url}/Projects`)).status;
    },
  },
  {
    name: 'the mount behind false && in src/app.ts',
    planShows: ['--- a/src/app.ts', `-  false && ${mount.trim()}`],
    alsoFailsInVerify: ['auth-endpoints', 'tenant-isolation', 'realtime', 'service-credential'],
    breakFiles: (dir) => breakFile(dir, 'src/app.ts', mount, `  false && ${mount.trimStart()}`),
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
    for (const name of ['the mount deleted from src/app.ts', 'the mount commented out in src/app.ts', 'the mount after the return of createApp', 'the mount in an if (false) block of src/app.ts', 'the mount behind false && in src/app.ts']) {
      expect(stage(name, 'treeAfterFirst').get('src/app.ts'), name).toBe(app);
    }
  });

  it('if (false): verify names the dead mount and the 404s; once repaired, /Projects asks who is calling', () => {
    const name = 'the mount in an if (false) block of src/app.ts';
    const check = stage(name, 'verifyBefore').report.checks.find((result) => result.id === 'module-wiring')!;
    expect(check.message).toContain(dead);
    expect(check.message).toContain('not mounted in the running backend: GET /Users (404');
    expect(stage(name, 'extra').projectsStatus).toBe(401);
  });

  it('src/generated/index.ts is restored byte for byte, and /Tasks answers again', () => {
    const name = 'src/generated/index.ts without the /Tasks mount';
    expect(stage(name, 'treeAfterFirst').get('src/generated/index.ts')).toBe(fs.readFileSync(path.join(exampleDir, 'src/generated/index.ts'), 'utf8'));
    expect(stage(name, 'extra').tasksStatus).toBe(401);
    expect(stage(name, 'verifyBefore').report.checks.find((result) => result.id === 'module-wiring')!.message).toContain('GET /Tasks (404');
  });
});
