import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleDir, exampleHandWritten, readTree, runCli, tempDir } from './support/cli.js';

const created: string[] = [];
function workspace(): string {
  const dir = tempDir();
  created.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of created.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A copy of the example project (without node_modules) to change freely. */
function copyOfExample(): string {
  const dir = path.join(workspace(), 'saas-backend');
  fs.cpSync(exampleDir, dir, { recursive: true, filter: (source) => !/node_modules|\.data/.test(path.relative(exampleDir, source)) });
  return dir;
}

function editSchema(dir: string, edit: (source: string) => string) {
  const file = path.join(dir, 'authstrap.schema.ts');
  fs.writeFileSync(file, edit(fs.readFileSync(file, 'utf8')));
}

describe('authstrap generate', () => {
  it('regenerating the committed example changes no byte', () => {
    const dir = copyOfExample();
    const before = readTree(dir);
    const result = runCli(['generate', dir]);
    expect(result.status, result.output).toBe(0);
    expect(result.stdout).toContain('up to date');
    expect(readTree(dir)).toEqual(before);
    expect(runCli(['generate', exampleDir, '--check']).status).toBe(0);
  });

  it('a fresh project from the example schema is byte for byte the committed example', () => {
    const dir = path.join(workspace(), 'saas-backend');
    fs.mkdirSync(dir);
    fs.copyFileSync(path.join(exampleDir, 'authstrap.schema.ts'), path.join(dir, 'authstrap.schema.ts'));
    const result = runCli(['generate', dir]);
    expect(result.status, result.output).toBe(0);
    const fresh = readTree(dir);
    const committed = readTree(exampleDir, exampleHandWritten);
    expect([...fresh.keys()].sort()).toEqual([...committed.keys()].sort());
    for (const [file, contents] of committed) expect(fresh.get(file), file).toBe(contents);
  });

  it('--json prints one JSON document on stdout (the changes), the lines for people on stderr; --yes is accepted', () => {
    const dir = copyOfExample();
    const upToDate = runCli(['generate', dir, '--json', '--yes']);
    expect(upToDate.status, upToDate.output).toBe(0);
    expect(JSON.parse(upToDate.stdout)).toEqual({ ok: true, dir, upToDate: true, written: false, changes: [] });
    expect(upToDate.stderr).toContain('up to date');

    editSchema(dir, (source) => source.replace("title: { type: 'string'", "dueAt: { type: 'datetime', nullable: true },\n        title: { type: 'string'"));
    const check = runCli(['generate', dir, '--check', '--json']);
    expect(check.status).toBe(1);
    const report = JSON.parse(check.stdout);
    expect(report).toMatchObject({ ok: false, upToDate: false, written: false });
    expect(report.changes).toContainEqual({ action: 'create', path: expect.stringMatching(/^migrations\/0002_.+\.sql$/) });
    expect(check.stderr).toContain('not up to date');
  });

  it("a README written for a project names the port of the project's .env", () => {
    const dir = path.join(workspace(), 'own-port');
    fs.mkdirSync(dir);
    fs.copyFileSync(path.join(exampleDir, 'authstrap.schema.ts'), path.join(dir, 'authstrap.schema.ts'));
    fs.writeFileSync(path.join(dir, '.env'), 'PORT=4555\n');
    const result = runCli(['generate', dir]);
    expect(result.status, result.output).toBe(0);
    const readme = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
    expect(readme).toContain('http://localhost:4555');
    expect(readme).not.toContain('3000');
  });

  it('writes a new migration for a schema change, and --check and --dry-run change nothing', () => {
    const dir = copyOfExample();
    editSchema(dir, (source) => source.replace("title: { type: 'string'", "dueAt: { type: 'datetime', nullable: true },\n        title: { type: 'string'"));
    const before = readTree(dir);

    const check = runCli(['generate', dir, '--check']);
    expect(check.status).toBe(1);
    expect(check.output).toContain('not up to date');
    const dryRun = runCli(['generate', dir, '--dry-run']);
    expect(dryRun.status).toBe(0);
    expect(dryRun.stdout).toContain('+ ');
    expect(dryRun.stdout).toContain('migrations/0002_alter_task.sql');
    expect(readTree(dir)).toEqual(before);

    const result = runCli(['generate', dir]);
    expect(result.status, result.output).toBe(0);
    const migration = fs.readFileSync(path.join(dir, 'migrations/0002_alter_task.sql'), 'utf8');
    expect(migration).toContain('ALTER TABLE "Task" ADD COLUMN "dueAt" timestamptz;');
    expect(fs.readFileSync(path.join(dir, 'migrations/0001_init.sql'), 'utf8')).toBe(before.get('migrations/0001_init.sql'));
    expect(fs.readFileSync(path.join(dir, 'src/generated/Task/task.schema.ts'), 'utf8')).toContain('dueAt: z.iso.datetime({ offset: true }).nullable().optional()');

    // Idempotent: a second run has nothing left to do.
    const again = runCli(['generate', dir]);
    expect(again.stdout).toContain('up to date');
  });

  it('never writes to src/extensions or other files the user owns', () => {
    const dir = copyOfExample();
    const mine = '// my routes\nexport function extensionRouter() {}\n';
    fs.writeFileSync(path.join(dir, 'src/extensions/index.ts'), mine);
    fs.writeFileSync(path.join(dir, 'src/app.ts'), '// my app\n');
    editSchema(dir, (source) => source.replace("description: { type: 'text'", "budget: { type: 'number', nullable: true },\n        description: { type: 'text'"));
    expect(runCli(['generate', dir]).status).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'src/extensions/index.ts'), 'utf8')).toBe(mine);
    expect(fs.readFileSync(path.join(dir, 'src/app.ts'), 'utf8')).toBe('// my app\n');
  });

  it('refuses to drop a removed entity unless --allow-drop, then removes its generated folder', () => {
    const dir = copyOfExample();
    editSchema(dir, (source) => source.slice(0, source.indexOf('    // Also reachable')) + '  },\n};\n');
    const refused = runCli(['generate', dir]);
    expect(refused.status).toBe(1);
    expect(refused.output).toContain('table "Task" is no longer in the schema');
    expect(refused.output).toContain('--allow-drop');
    expect(fs.existsSync(path.join(dir, 'src/generated/Task'))).toBe(true);

    const dropped = runCli(['generate', dir, '--allow-drop']);
    expect(dropped.status, dropped.output).toBe(0);
    expect(fs.existsSync(path.join(dir, 'src/generated/Task'))).toBe(false);
    const migration = fs.readdirSync(path.join(dir, 'migrations')).find((name) => name.startsWith('0002_'))!;
    expect(fs.readFileSync(path.join(dir, 'migrations', migration), 'utf8')).toContain('DROP TABLE "Task";');
  });

  it('reports schema mistakes naming the entity and field, and writes nothing', () => {
    const dir = copyOfExample();
    editSchema(dir, (source) => source.replace("type: 'enum', values: ['todo', 'doing', 'done']", "type: 'enum'"));
    const before = readTree(dir);
    const result = runCli(['generate', dir]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('entity "Task", field "status"');
    expect(result.stderr).toContain('values');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(readTree(dir)).toEqual(before);
  });

  it('says where the schema file is missing', () => {
    const dir = workspace();
    const result = runCli(['generate', dir]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('authstrap.schema.ts: not found');
  });
});

describe('the authstrap command line', () => {
  it('prints help and version with exit 0', () => {
    const help = runCli(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('generate');
    expect(runCli(['--version']).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('answers an unknown flag or command with exit 2 and the thing to change', () => {
    const flag = runCli(['generate', '--frobnicate']);
    expect(flag.status).toBe(2);
    expect(flag.stderr).toContain("unknown option '--frobnicate'");
    const command = runCli(['frobnicate']);
    expect(command.status).toBe(2);
    expect(command.stderr).toContain("unknown command 'frobnicate'");
  });
});
