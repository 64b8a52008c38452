import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { applyWrites, basePathOf, movedOwnedFiles, ownedFilesPath, planMoves, planWrites, type DiskState, type OwnedVersions } from '../src/generate/apply.js';
import { planSettle } from '../src/generate/settle.js';
import { createHash } from 'node:crypto';
import { loadTemplates, planGenerate } from '../src/generate/index.js';
import { renderProject, type PlannedFile } from '../src/generate/render.js';
import type { Templates } from '../src/generate/templates.js';
import type { Schema, SchemaFile } from '../src/schema/types.js';
import { validateSchema } from '../src/schema/validate.js';
import { version as cliVersion } from '../src/version.js';

/** The schema of examples/saas-backend, written out so that these tests do not depend on it. */
const exampleSchemaFile: SchemaFile = {
  entities: {
    Project: {
      fields: {
        name: { type: 'string', minLength: 2, maxLength: 200 },
        description: { type: 'text', nullable: true, maxLength: 5000 },
        status: { type: 'enum', values: ['active', 'archived'], default: 'active' },
      },
    },
    Task: {
      parent: 'projectId',
      fields: {
        projectId: { type: 'uuid', references: 'Project', onDelete: 'cascade' },
        title: { type: 'string', minLength: 1, maxLength: 200, searchable: true },
        status: { type: 'enum', values: ['todo', 'doing', 'done'], default: 'todo' },
      },
    },
  },
};
const exampleSchema = (): Schema => validateSchema(structuredClone(exampleSchemaFile));

describe('renderProject', () => {
  const fixtureTemplates: Templates = {
    project: new Map([
      ['_gitignore', 'node_modules\n'],
      ['package.json.hbs', '{ "name": "{{packageName}}" }\n'],
      ['src/app.ts', 'export const untouched = "{{not a template}}";\n'],
    ]),
    generated: new Map([['index.ts.hbs', '{{#each mounts}}{{path}} -> {{handlers}}\n{{/each}}']]),
    entity: new Map([['schema.ts.hbs', '// {{pascal}} at {{path}}{{#if parent}}, nested at {{parent.routePath}}{{/if}}\n']]),
    builtin: new Map([['user.schema.ts', '// the built-in User file\n']]),
    client: new Map(),
  };
  const render = (schema: Schema) => renderProject(schema, fixtureTemplates, { packageName: 'my-app' });

  it('uses a built-in entity\'s own template when there is one, and the generic one otherwise', () => {
    const files = render(validateSchema({ entities: { Project: { fields: { name: { type: 'string' } } } } }));
    const contents = (path: string) => files.find((file) => file.path === path)?.contents;
    expect(contents('src/generated/User/user.schema.ts')).toBe('// the built-in User file\n');
    expect(contents('src/generated/account/account.schema.ts')).toBe('// Account at /accounts\n');
    expect(contents('src/generated/Project/project.schema.ts')).toBe('// Project at /Projects\n');
  });

  it('writes project files once (owned) and src/generated/ on every run (generated), sorted by path', () => {
    const files = render(validateSchema({ auth: false, entities: { UserSetting: { fields: {} } } }));
    expect(files.map((file) => [file.path, file.ownership])).toEqual([
      ['.gitignore', 'owned'],
      ['package.json', 'owned'],
      ['src/app.ts', 'owned'],
      ['src/generated/UserSetting/user-setting.schema.ts', 'generated'],
      ['src/generated/index.ts', 'generated'],
    ]);
  });

  it('renders .hbs templates with the project view and copies other files as they are', () => {
    const files = new Map(render(exampleSchema()).map((file) => [file.path, file.contents]));
    expect(files.get('package.json')).toBe('{ "name": "my-app" }\n');
    expect(files.get('src/app.ts')).toBe('export const untouched = "{{not a template}}";\n');
    expect(files.get('src/generated/Task/task.schema.ts')).toBe('// Task at /Tasks, nested at /Projects/:projectId/Tasks\n');
    // Every nested path before all the collections; your own tenant-scoped entities first (most
    // requests are theirs, and Express tries each mount above the one that matches), then the
    // global ones, then the built-in scoped one. The trusted server's API stands in front of each
    // built-in entity's own router, before the scope guard (it acts across organizations);
    // verification and apikey have no router for users at all. Your own tenant-scoped entities
    // stand behind tenantScoped (a read checks its caller in its statement), which names the
    // entity for machine keys. A user's writes to the others take an Idempotency-Key (`keyed`),
    // behind the guards: the key is the caller's.
    expect(files.get('src/generated/index.ts')).toBe(
      [
        "/Projects/:projectId/Tasks -> ...tenantScoped(deps, taskNestedRouter(deps), 'Task')",
        "/Projects -> ...tenantScoped(deps, projectRouter(deps), 'Project')",
        "/Tasks -> ...tenantScoped(deps, taskRouter(deps), 'Task')",
        '/Users -> signedIn, serviceApi.user, keyed, userRouter(deps)',
        '/accounts -> signedIn, serviceApi.account, keyed, accountRouter(deps)',
        '/sessions -> signedIn, serviceApi.session, keyed, sessionRouter(deps)',
        '/verifications -> signedIn, requires.serviceKey, serviceApi.verification',
        '/Organizations -> signedIn, serviceApi.organization, keyed, organizationRouter(deps)',
        '/apikeys -> signedIn, requires.serviceKey, serviceApi.apikey',
        '/members -> signedIn, serviceApi.member, scopeGuard, keyed, memberRouter(deps)',
        '',
      ].join('\n'),
    );
  });

  it('renders the real templates to the same bytes every time', () => {
    const templates = loadTemplates();
    const first = renderProject(exampleSchema(), templates, { packageName: 'saas-backend' });
    // Rendering another schema in between must not leak into the next render.
    renderProject(validateSchema({ auth: false, entities: { Note: { fields: { body: { type: 'text' } } } } }), templates, { packageName: 'other' });
    const second = renderProject(exampleSchema(), loadTemplates(), { packageName: 'saas-backend' });
    expect(first.length).toBeGreaterThan(0);
    expect(second).toEqual(first);
    expect(first.map((file) => file.path)).toContain('src/generated/Task/task.schema.ts');
  });

  it('names the authstrap that wrote the project in its README and asks for that version in package.json', () => {
    const files = renderProject(exampleSchema(), loadTemplates(), { packageName: 'saas-backend' });
    const contents = (file: string) => files.find((planned) => planned.path === file)!.contents;
    expect(contents('README.md')).toContain(`generated by authstrap ${cliVersion},`);
    expect(JSON.parse(contents('package.json')).devDependencies.authstrap).toBe(cliVersion);
  });

  it('renders the same files, in the same order, whatever the locale of the machine', () => {
    const render = () => renderProject(exampleSchema(), loadTemplates(), { packageName: 'saas-backend' });
    const usual = render();
    // In Estonian, "z" sorts between "s" and "t": zod would come before tsx.
    const estonian = new Intl.Collator('et');
    const spy = vi.spyOn(String.prototype, 'localeCompare').mockImplementation(function (this: string, other: string) {
      return estonian.compare(this, other);
    });
    try {
      expect(render()).toEqual(usual);
    } finally {
      spy.mockRestore();
    }
    const dependencies = Object.keys(JSON.parse(usual.find((file) => file.path === 'package.json')!.contents).dependencies);
    expect(dependencies).toEqual([...dependencies].sort());
  });
});

describe('planWrites', () => {
  const planned: PlannedFile[] = [
    { path: 'src/generated/index.ts', contents: 'new index', ownership: 'generated' },
    { path: 'src/generated/Project/project.schema.ts', contents: 'project schema', ownership: 'generated' },
    { path: 'src/app.ts', contents: 'template app', ownership: 'owned' },
    { path: '.env.example', contents: 'PORT=3000', ownership: 'owned' },
    { path: 'migrations/0001_init.sql', contents: 'CREATE TABLE "Project" (...);', ownership: 'migration' },
    { path: 'migrations/0002_alter_project.sql', contents: 'ALTER TABLE "Project" ...;', ownership: 'migration' },
  ];
  const disk = (
    contents: Record<string, string>,
    generatedFiles = Object.keys(contents).filter((file) => file.startsWith('src/generated/')),
    ownedVersions?: OwnedVersions,
  ): DiskState => ({
    contents: new Map([...planned.map((file) => file.path), ...Object.keys(contents)].map((file) => [file, contents[file]])),
    generatedFiles: generatedFiles.sort(),
    ownedVersions,
  });
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  /** What the record holds for a file written from a plain template: its template is its contents. */
  const version = (contents: string) => ({ template: sha256(contents), written: sha256(contents) });
  const recordIn = (writes: ReturnType<typeof planWrites>['writes']) => JSON.parse(writes.find((write) => write.path === ownedFilesPath)!.contents!).files;

  /** The owned files' bases as this version writes them. */
  const bases = { [basePathOf('src/app.ts')]: 'template app', [basePathOf('.env.example')]: 'PORT=3000' };
  const isBase = (file: string) => file.startsWith('.authstrap-base/');
  const projectFiles = (writes: ReturnType<typeof planWrites>['writes']) => writes.filter((write) => write.path !== ownedFilesPath && !isBase(write.path));

  it('creates every file on an empty disk, and records the owned ones with their bases', () => {
    const { writes, notes } = planWrites(planned, disk({}));
    expect(projectFiles(writes)).toEqual(planned.map((file) => ({ path: file.path, action: 'create', contents: file.contents })));
    expect(writes.filter((write) => isBase(write.path))).toEqual(Object.entries(bases).map(([file, contents]) => ({ path: file, action: 'create', contents })));
    expect(recordIn(writes)).toEqual({ '.env.example': version('PORT=3000'), 'src/app.ts': version('template app') });
    expect(notes).toEqual([]);
  });

  it('records which version of authstrap generated the project, so that an upgrade rewrites the record', () => {
    const record = planWrites(planned, disk({})).writes.find((write) => write.path === ownedFilesPath)!.contents!;
    expect(JSON.parse(record).authstrap).toBe(cliVersion);
    const older = record.replace(`"authstrap": "${cliVersion}"`, '"authstrap": "0.0.1"');
    const upgrade = planWrites(planned, disk({ 'src/app.ts': 'template app', '.env.example': 'PORT=3000', ...bases, [ownedFilesPath]: older }, [], { files: JSON.parse(older).files }));
    // The owned files are as this version writes them: the record is all that changes among them.
    expect(upgrade.writes.filter((write) => !write.path.startsWith('src/generated/') && !write.path.startsWith('migrations/'))).toEqual([{ path: ownedFilesPath, action: 'update', contents: record }]);
  });

  it('rewrites a generated file only when its contents differ', () => {
    const { writes } = planWrites(planned, disk({ 'src/generated/index.ts': 'old index', 'src/generated/Project/project.schema.ts': 'project schema' }));
    expect(writes.filter((write) => write.action === 'update')).toEqual([{ path: 'src/generated/index.ts', action: 'update', contents: 'new index' }]);
    expect(writes.map((write) => write.path)).not.toContain('src/generated/Project/project.schema.ts');
  });

  it('never overwrites an owned file and creates a missing one', () => {
    const { writes, notes } = planWrites(planned, disk({ 'src/app.ts': 'my own app' }));
    expect(writes.map((write) => write.path)).not.toContain('src/app.ts');
    expect(writes).toContainEqual({ path: '.env.example', action: 'create', contents: 'PORT=3000' });
    // A project from before the record: what it started from is unknown, so the file is only named.
    expect(writes.map((write) => write.path)).not.toContain('src/app.ts.authstrap-new');
    expect(notes.join('\n')).toContain('src/app.ts. To take this version of one, delete it');
    // Kept as if declined: this version is its base, so the next upgrade merges from here.
    expect(writes).toContainEqual({ path: basePathOf('src/app.ts'), action: 'create', contents: 'template app' });
    // Said once: with the record written, the next run has nothing to write or say about it.
    const record = writes.find((write) => write.path === ownedFilesPath)!.contents!;
    const again = planWrites(planned, disk({ 'src/app.ts': 'my own app', '.env.example': 'PORT=3000', ...bases, [ownedFilesPath]: record }, [], { files: JSON.parse(record).files }));
    expect(again.writes.filter((write) => !write.path.startsWith('src/generated/') && !write.path.startsWith('migrations/'))).toEqual([]);
    expect(again.notes).toEqual([]);
  });

  it('upgrades an owned file the user never changed, and offers the new version of one they did when there is no base', () => {
    const older = { files: { 'src/app.ts': version('older template app'), '.env.example': version('PORT=2000') } };
    // src/app.ts is as the older version wrote it; .env.example was changed by its user; no bases (a project from before them).
    const { writes, notes, pending } = planWrites(planned, disk({ 'src/app.ts': 'older template app', '.env.example': 'PORT=4444' }, [], older));
    expect(writes).toContainEqual({ path: 'src/app.ts', action: 'update', contents: 'template app' });
    expect(writes).toContainEqual({ path: basePathOf('src/app.ts'), action: 'create', contents: 'template app' });
    expect(writes.map((write) => write.path)).not.toContain('.env.example');
    expect(writes.map((write) => write.path)).not.toContain(basePathOf('.env.example'));
    expect(writes).toContainEqual({ path: '.env.example.authstrap-new', action: 'create', contents: 'PORT=3000' });
    // The changed file keeps what authstrap wrote as its measure of "unchanged", and waits for its user.
    expect(recordIn(writes)).toEqual({ '.env.example': { template: sha256('PORT=3000'), written: sha256('PORT=2000'), pending: 'offered' }, 'src/app.ts': version('template app') });
    expect(pending).toEqual([{ path: '.env.example', state: 'offered' }]);
    expect(notes.join('\n')).toContain('.env.example.authstrap-new');

    // Offered once, and then reminded of on every run, with or without the offer still beside it.
    const record = writes.find((write) => write.path === ownedFilesPath)!.contents!;
    const offers: Record<string, string>[] = [{ '.env.example.authstrap-new': 'PORT=3000' }, {}];
    for (const offer of offers) {
      const again = planWrites(planned, disk({ 'src/app.ts': 'template app', '.env.example': 'PORT=4444', [basePathOf('src/app.ts')]: 'template app', ...offer, [ownedFilesPath]: record }, [], { files: recordIn(writes) }));
      expect(again.writes.filter((write) => !write.path.startsWith('src/generated/') && !write.path.startsWith('migrations/'))).toEqual([]);
      expect(again.pending).toEqual([{ path: '.env.example', state: 'offered' }]);
      expect(again.notes.join('\n')).toContain('not merged yet: .env.example (this version beside it as .env.example.authstrap-new)');
    }
  });

  describe('a file the user changed, with its base', () => {
    const base = 'import a\n\nconst max = 100;\n\nexport function limit() {\n  return max;\n}\n';
    const olderRecord = { files: { 'src/app.ts': version(base), '.env.example': version('PORT=3000') }, authstrap: '0.1.0' };
    const upgrade = (mine: string, template: string) => {
      const files: PlannedFile[] = [{ path: 'src/app.ts', contents: template, ownership: 'owned' }];
      return planWrites(files, { contents: new Map([['src/app.ts', mine], [basePathOf('src/app.ts'), base]]), generatedFiles: [], ownedVersions: olderRecord });
    };

    it('merges this version into it when their changes are apart, and moves the base on', () => {
      const mine = base.replace('import a\n', 'import a\nimport mine\n');
      const template = base.replace('  return max;', '  return Math.min(max, 1000);');
      const { writes, notes, pending } = upgrade(mine, template);
      const merged = 'import a\nimport mine\n\nconst max = 100;\n\nexport function limit() {\n  return Math.min(max, 1000);\n}\n';
      expect(writes).toContainEqual({ path: 'src/app.ts', action: 'update', contents: merged });
      expect(writes).toContainEqual({ path: basePathOf('src/app.ts'), action: 'update', contents: template });
      expect(recordIn(writes)['src/app.ts']).toEqual(version(template));
      expect(pending).toEqual([]);
      expect(notes.join('\n')).toContain('merged this version\'s changes into a file you changed (review them before you commit): src/app.ts');
    });

    it('writes both sides between conflict markers when they change the same line, and waits for resolve', () => {
      const mine = base.replace('const max = 100;', 'const max = 500;');
      const template = base.replace('const max = 100;', 'const max = Number(process.env.LIMIT);');
      const { writes, notes, pending } = upgrade(mine, template);
      const file = writes.find((write) => write.path === 'src/app.ts')!.contents!;
      expect(file).toContain('<<<<<<< yours: src/app.ts\nconst max = 500;\n||||||| authstrap 0.1.0\nconst max = 100;\n=======\nconst max = Number(process.env.LIMIT);\n>>>>>>> authstrap ');
      // The base stays the older text until the merge is done.
      expect(writes.map((write) => write.path)).not.toContain(basePathOf('src/app.ts'));
      expect(recordIn(writes)['src/app.ts']).toEqual({ template: sha256(template), written: sha256(base), pending: 'conflict' });
      expect(pending).toEqual([{ path: 'src/app.ts', state: 'conflict' }]);
      expect(notes.join('\n')).toContain('src/app.ts (1 conflict). Edit each to what it should be, then run `authstrap resolve <file>`');

      // resolve refuses while markers are left, then takes this version as the base.
      const recordText = writes.find((write) => write.path === ownedFilesPath)!.contents!;
      const planned: PlannedFile = { path: 'src/app.ts', contents: template, ownership: 'owned' };
      const early = planSettle('resolve', { path: 'src/app.ts', planned, current: file, recordText, offerExists: false });
      expect(early).toEqual({ problem: 'src/app.ts still has conflict markers at lines 3, 5, 7, 9: edit them out, then run `authstrap resolve src/app.ts` again' });
      const edited = base.replace('const max = 100;', 'const max = Number(process.env.LIMIT ?? 500);');
      const settled = planSettle('resolve', { path: 'src/app.ts', planned, current: edited, recordText, offerExists: false });
      expect('writes' in settled && settled.writes.map((write) => write.path)).toEqual([ownedFilesPath, basePathOf('src/app.ts')]);
      const writesAfter = 'writes' in settled ? settled.writes : [];
      expect(JSON.parse(writesAfter[0]!.contents!).files['src/app.ts']).toEqual(version(template));
      expect(writesAfter[1]!.contents).toBe(template);
      // Settled once: there is nothing left to resolve.
      expect(planSettle('resolve', { path: 'src/app.ts', planned, current: edited, recordText: writesAfter[0]!.contents, offerExists: false })).toEqual({
        problem: 'src/app.ts has no upgrade waiting (authstrap.files.json): nothing to resolve',
      });
    });

    it('decline records the version declined and removes the offer beside the file', () => {
      const recordText = JSON.stringify({ files: { 'src/app.ts': { template: 'x', written: sha256(base), pending: 'offered' } } });
      const planned: PlannedFile = { path: 'src/app.ts', contents: 'new', ownership: 'owned' };
      const settled = planSettle('decline', { path: 'src/app.ts', planned, current: 'mine', recordText, offerExists: true });
      if (!('writes' in settled)) throw new Error(settled.problem);
      expect(settled.writes.map((write) => [write.path, write.action])).toEqual([
        [ownedFilesPath, 'update'],
        [basePathOf('src/app.ts'), 'update'],
        ['src/app.ts.authstrap-new', 'remove'],
      ]);
      expect(JSON.parse(settled.writes[0]!.contents!).files['src/app.ts']).toEqual({ ...version('new'), declined: cliVersion });
      expect(planSettle('decline', { path: 'src/extensions/mine.ts', planned: undefined, current: 'x', recordText, offerExists: false })).toEqual({
        problem: 'src/extensions/mine.ts is not a file authstrap created for you to own: only those have upgrades to decline',
      });
    });
  });

  describe('an owned file that moved since the release that wrote it', () => {
    const from = 'src/extensions/auth/invitations.ts';
    const to = 'src/auth/invitations.ts';
    const base = "import { messages } from '../mail/messages.js';\n\nconst lifetimeMs = 7 * day;\n\nexport function invite() {\n  return send();\n}\n";
    const template = base.replace("'../mail/messages.js'", "'../extensions/mail/messages.js'");
    const olderRecord = { files: { [from]: version(base) }, authstrap: '0.2.0' };
    const upgrade = (mine: string, contents: Record<string, string> = { [basePathOf(from)]: base }) =>
      planWrites([{ path: to, contents: template, ownership: 'owned' }], {
        contents: new Map<string, string | undefined>([[to, undefined], [from, mine], ...Object.entries(contents)]),
        generatedFiles: [],
        ownedVersions: olderRecord,
      });
    const removed = (writes: ReturnType<typeof planWrites>['writes']) => writes.filter((write) => write.action === 'remove').map((write) => write.path);

    it('is listed with its new path for each engine file that left src/extensions/auth', () => {
      expect(movedOwnedFiles.get(from)).toBe(to);
      expect(movedOwnedFiles.get('src/extensions/auth/auth.router.ts')).toBe('src/auth/auth.router.ts');
      // The files a user extends stay where they are.
      expect(movedOwnedFiles.has('src/extensions/auth/auth.service.ts')).toBe(false);
      expect(movedOwnedFiles.has('src/extensions/auth/auth.decorator.ts')).toBe(false);
    });

    it('unchanged by its user: written at its new path; the old file and its base removed', () => {
      const { writes, notes, pending } = upgrade(base);
      expect(writes).toContainEqual({ path: to, action: 'create', contents: template });
      expect(writes).toContainEqual({ path: basePathOf(to), action: 'create', contents: template });
      expect(removed(writes)).toEqual([from, basePathOf(from)]);
      expect(recordIn(writes)).toEqual({ [to]: version(template) });
      expect(pending).toEqual([]);
      expect(notes.join('\n')).toContain(`this version moves a file you own: ${from} -> ${to}`);
    });

    it('changed by its user away from this version\'s changes: merged three ways into its new path', () => {
      const mine = base.replace('7 * day', '14 * day');
      const { writes, notes, pending } = upgrade(mine);
      expect(writes).toContainEqual({ path: to, action: 'create', contents: template.replace('7 * day', '14 * day') });
      expect(writes).toContainEqual({ path: basePathOf(to), action: 'create', contents: template });
      expect(removed(writes)).toEqual([from, basePathOf(from)]);
      expect(pending).toEqual([]);
      expect(notes.join('\n')).toContain(`merged this version's changes into a file you changed (review them before you commit): ${to}`);
    });

    it('with no base kept in the project, merged from the released template its record names', () => {
      const mine = base.replace('7 * day', '14 * day');
      const { writes } = planWrites([{ path: to, contents: template, ownership: 'owned' }], {
        contents: new Map<string, string | undefined>([[to, undefined], [from, mine]]),
        generatedFiles: [],
        ownedVersions: olderRecord,
        releasedBases: new Map([[from, base]]),
      });
      expect(writes).toContainEqual({ path: to, action: 'create', contents: template.replace('7 * day', '14 * day') });
      expect(removed(writes)).toEqual([from]);
    });

    it('changed on the same lines: written with conflict markers at its new path, its old base beside it until resolve', () => {
      const mine = base.replace("'../mail/messages.js'", "'../mail/our-messages.js'");
      const { writes, pending } = upgrade(mine);
      expect(writes.find((write) => write.path === to)!.contents).toContain(`<<<<<<< yours: ${to}\n`);
      expect(writes).toContainEqual({ path: basePathOf(to), action: 'create', contents: base });
      expect(removed(writes)).toEqual([from, basePathOf(from)]);
      expect(recordIn(writes)[to]).toEqual({ template: sha256(template), written: sha256(base), pending: 'conflict' });
      expect(pending).toEqual([{ path: to, state: 'conflict' }]);
    });

    it('changed and with no base at all: kept as its user wrote it at the new path, this version offered beside it', () => {
      const mine = base.replace('7 * day', '14 * day');
      const { writes, pending } = upgrade(mine, {});
      expect(writes).toContainEqual({ path: to, action: 'create', contents: mine });
      expect(writes).toContainEqual({ path: `${to}.authstrap-new`, action: 'create', contents: template });
      expect(removed(writes)).toEqual([from]);
      expect(pending).toEqual([{ path: to, state: 'offered' }]);
    });

    it('already at both places: nothing moves, the old file is kept and named', () => {
      const disk: DiskState = { contents: new Map([[to, template], [from, base]]), generatedFiles: [], ownedVersions: { files: { [to]: version(template) } } };
      const moves = planMoves([{ path: to, contents: template, ownership: 'owned' }], disk);
      expect(moves.moved).toEqual([]);
      expect(moves.disk.contents.get(to)).toBe(template);
      expect(moves.notes).toEqual([`a file this version moved is at both places, so the old one is kept: ${from} (now ${to}). Delete it once nothing imports it`]);
      // Once moved, a run finds nothing to move.
      expect(planMoves([{ path: to, contents: template, ownership: 'owned' }], { ...disk, contents: new Map([[to, template]]) })).toMatchObject({ moved: [], notes: [] });
    });
  });

  it('setup --force writes the owned files over what is there', () => {
    const { writes } = planWrites(planned, disk({ 'src/app.ts': 'my own app' }), { overwriteOwned: true });
    expect(writes).toContainEqual({ path: 'src/app.ts', action: 'update', contents: 'template app' });
    expect(recordIn(writes)['src/app.ts']).toEqual(version('template app'));
  });

  it('never rewrites a file rendered for the project (package.json), and reads the same template rendered otherwise as no change', () => {
    const packageJson = (name: string): PlannedFile => ({ path: 'package.json', contents: `{"name":"${name}"}`, ownership: 'owned', template: { source: '{"name":"{{packageName}}"}', rendered: true } });
    const files = [packageJson('shop')];
    const diskOf = (contents: string, recorded: OwnedVersions): DiskState => ({ contents: new Map([['package.json', contents]]), generatedFiles: [], ownedVersions: recorded });
    // Written for "shop"; a command that renders it for another name, with the same template: nothing to do.
    const written = { files: { 'package.json': { template: sha256('{"name":"{{packageName}}"}'), written: sha256('{"name":"shop"}') } } };
    const same = planWrites([packageJson('backend')], diskOf('{"name":"shop"}', written));
    expect(same.writes.filter((write) => write.path !== ownedFilesPath && !isBase(write.path))).toEqual([]);
    expect(same.notes).toEqual([]);
    // A new template: offered beside it, even though the file is as authstrap wrote it.
    const older = { files: { 'package.json': { template: sha256('{"name":"{{packageName}}","old":true}'), written: sha256('{"name":"shop","old":true}') } } };
    const upgraded = planWrites(files, diskOf('{"name":"shop","old":true}', older));
    expect(upgraded.writes.map((write) => write.path)).toEqual(['package.json.authstrap-new', ownedFilesPath]);
  });

  it('merges a new template of a rendered file from its base rendered for today: the name given at setup stays, the template\'s change comes', () => {
    const data = { packageName: 'backend' };
    const render = (source: string) => source.replace('{{packageName}}', 'backend');
    const newer = '{\n  "name": "{{packageName}}",\n  "type": "module",\n  "engines": ">=22"\n}\n';
    const older = '{\n  "name": "{{packageName}}",\n  "type": "module",\n  "engines": ">=20"\n}\n';
    const planned: PlannedFile = { path: 'package.json', contents: render(newer), ownership: 'owned', template: { source: newer, rendered: true, data } };
    // Written by setup as "shop" (generate renders it as "backend", from the folder), then changed by its user.
    const mine = '{\n  "private": true,\n  "name": "shop",\n  "type": "module",\n  "engines": ">=20"\n}\n';
    const recorded: OwnedVersions = { files: { 'package.json': { template: sha256(older), written: sha256(older.replace('{{packageName}}', 'shop')) } } };
    const { writes, pending } = planWrites([planned], { contents: new Map([['package.json', mine], [basePathOf('package.json'), older]]), generatedFiles: [], ownedVersions: recorded });
    expect(writes).toContainEqual({ path: 'package.json', action: 'update', contents: '{\n  "private": true,\n  "name": "shop",\n  "type": "module",\n  "engines": ">=22"\n}\n' });
    expect(writes).toContainEqual({ path: basePathOf('package.json'), action: 'update', contents: newer });
    expect(pending).toEqual([]);
  });

  it('never rewrites a migration that exists, even when its contents differ', () => {
    const { writes } = planWrites(planned, disk({ 'migrations/0001_init.sql': 'CREATE TABLE "Project" (edited by hand);' }));
    expect(writes.map((write) => write.path)).not.toContain('migrations/0001_init.sql');
    expect(writes).toContainEqual({ path: 'migrations/0002_alter_project.sql', action: 'create', contents: 'ALTER TABLE "Project" ...;' });
  });

  it('removes generated files that are no longer planned', () => {
    const everything = Object.fromEntries(planned.map((file) => [file.path, file.contents]));
    const stale = ['src/generated/Task/task.router.ts', 'src/generated/Task/task.schema.ts'];
    const { writes } = planWrites(planned, disk(everything, [...Object.keys(everything).filter((file) => file.startsWith('src/generated/')), ...stale]));
    expect(projectFiles(writes)).toEqual(stale.map((file) => ({ path: file, action: 'remove' })));
  });
});

describe('planGenerate on a project folder', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });
  const projectDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-generate-'));
    dirs.push(dir);
    return dir;
  };

  it('writes a project, then has nothing left to write', () => {
    const dir = projectDir();
    const templates = loadTemplates();
    const first = planGenerate(dir, exampleSchema(), templates);
    expect(first.problems).toEqual([]);
    expect(first.writes.every((write) => write.action === 'create')).toBe(true);
    expect(first.writes.map((write) => write.path)).toEqual(
      expect.arrayContaining(['migrations/0001_init.sql', 'migrations/schema-snapshot.json', 'src/generated/Task/task.schema.ts']),
    );
    applyWrites(dir, first.writes);
    expect(planGenerate(dir, exampleSchema(), templates)).toMatchObject({ writes: [], problems: [], notes: [], pendingUpgrades: [] });
  });

  it('keeps edits to owned files, restores generated ones, and removes a dropped entity with its folder', () => {
    const dir = projectDir();
    const templates = loadTemplates();
    applyWrites(dir, planGenerate(dir, exampleSchema(), templates).writes);
    const ownedFile = renderProject(exampleSchema(), templates, { packageName: 'x' }).find((file) => file.ownership === 'owned')!.path;
    fs.writeFileSync(path.join(dir, ownedFile), 'edited by the user');
    fs.writeFileSync(path.join(dir, 'src/generated/Project/project.schema.ts'), 'edited by mistake');

    const withoutTask = validateSchema({ entities: { Project: exampleSchemaFile.entities.Project! } });
    const plan = planGenerate(dir, withoutTask, templates, { allowDrop: true });
    expect(plan.problems).toEqual([]);
    const actions = new Map(plan.writes.map((write) => [write.path, write.action]));
    expect(actions.get(ownedFile)).toBeUndefined();
    expect(actions.get('src/generated/Project/project.schema.ts')).toBe('update');
    expect(actions.get('src/generated/Task/task.schema.ts')).toBe('remove');
    expect(actions.get('migrations/0002_alter_project_task.sql')).toBe('create');

    applyWrites(dir, plan.writes);
    expect(fs.readFileSync(path.join(dir, ownedFile), 'utf8')).toBe('edited by the user');
    expect(fs.existsSync(path.join(dir, 'src/generated/Task'))).toBe(false);
    expect(fs.readFileSync(path.join(dir, 'migrations/0001_init.sql'), 'utf8')).toContain('CREATE TABLE "Task"');
  });
});
