import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clientOutputs } from '../src/generate/index.js';
import { exampleDir, readTree, repoRoot, runCli, tempDir } from './support/cli.js';

const created: string[] = [];
afterEach(() => {
  for (const dir of created.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A folder holding a backend project `api/` generated from `schema` (the example's by default), and a frontend `web/src/`. */
function workspace(schema = fs.readFileSync(path.join(exampleDir, 'authstrap.schema.ts'), 'utf8')) {
  const root = tempDir();
  created.push(root);
  const backend = path.join(root, 'api');
  fs.mkdirSync(backend);
  fs.mkdirSync(path.join(root, 'web/src'), { recursive: true });
  fs.writeFileSync(path.join(backend, 'authstrap.schema.ts'), schema);
  const result = runCli(['generate', backend]);
  expect(result.status, result.output).toBe(0);
  return { root, backend };
}

function listClients(backend: string, clients: unknown) {
  const file = path.join(backend, 'package.json');
  const packageJson = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.writeFileSync(file, JSON.stringify({ ...packageJson, authstrap: { clients } }, null, 2));
}

const clientFile = 'client/authstrap-client.ts';

describe('authstrap generate: the typed client', () => {
  it('writes client/authstrap-client.ts into the project, the same bytes as the example', () => {
    const { backend } = workspace();
    const client = fs.readFileSync(path.join(backend, clientFile), 'utf8');
    expect(client).toBe(fs.readFileSync(path.join(exampleDir, clientFile), 'utf8'));
    expect(client).toContain('export function createAuthstrapClient(');
    // The backend's own typecheck covers it.
    expect(JSON.parse(fs.readFileSync(path.join(backend, 'tsconfig.json'), 'utf8')).include).toContain('client');
  });

  it('rewrites a hand-edited client (it is generated), and --check reports it first', () => {
    const { backend } = workspace();
    const file = path.join(backend, clientFile);
    const original = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, original.replace("const credentials = options.credentials ?? 'include';", "const credentials = 'omit';"));
    const check = runCli(['generate', backend, '--check']);
    expect(check.status).toBe(1);
    expect(check.stdout).toContain(`~ ${path.relative(repoRoot, path.join(backend, clientFile))}`);
    expect(runCli(['generate', backend]).status).toBe(0);
    expect(fs.readFileSync(file, 'utf8')).toBe(original);
  });

  it('writes a copy to each path of authstrap.clients in package.json, and keeps them in sync', () => {
    const { root, backend } = workspace();
    listClients(backend, ['../web/src/lib/authstrap-client.ts']);
    const copy = path.join(root, 'web/src/lib/authstrap-client.ts');

    const dryRun = runCli(['generate', backend, '--dry-run']);
    expect(dryRun.status, dryRun.output).toBe(0);
    expect(dryRun.stdout).toContain(`+ ${path.relative(repoRoot, copy)}`);
    expect(fs.existsSync(copy)).toBe(false);

    const written = runCli(['generate', backend]);
    expect(written.status, written.output).toBe(0);
    const client = fs.readFileSync(path.join(backend, clientFile), 'utf8');
    expect(fs.readFileSync(copy, 'utf8')).toBe(client);

    // A stale copy (the schema changed, or someone edited it) is what --check is for.
    fs.appendFileSync(copy, '// edited by hand\n');
    const check = runCli(['generate', backend, '--check']);
    expect(check.status).toBe(1);
    expect(check.stdout).toContain(`~ ${path.relative(repoRoot, copy)}`);
    expect(check.output).toContain('not up to date');

    // A schema change reaches both.
    const schemaFile = path.join(backend, 'authstrap.schema.ts');
    fs.writeFileSync(schemaFile, fs.readFileSync(schemaFile, 'utf8').replace("title: { type: 'string'", "estimate: { type: 'number', nullable: true },\n        title: { type: 'string'"));
    expect(runCli(['generate', backend]).status).toBe(0);
    const regenerated = fs.readFileSync(path.join(backend, clientFile), 'utf8');
    expect(regenerated).toContain('estimate?: number | null;');
    expect(fs.readFileSync(copy, 'utf8')).toBe(regenerated);
    expect(runCli(['generate', backend, '--check']).status).toBe(0);
  });

  it.each([
    ['a path that is not a .ts file', '../web/src/lib/authstrap-client.js', 'is not a .ts file'],
    ['a folder whose parent does not exist', '../mobile/src/lib/authstrap-client.ts', 'is in a folder whose parent ../mobile/src does not exist'],
  ])('refuses %s in authstrap.clients, naming package.json and the entry, and writes nothing', (_case, entry, why) => {
    const { root, backend } = workspace();
    listClients(backend, [entry]);
    const schemaFile = path.join(backend, 'authstrap.schema.ts');
    fs.writeFileSync(schemaFile, fs.readFileSync(schemaFile, 'utf8').replace("title: { type: 'string'", "estimate: { type: 'number', nullable: true },\n        title: { type: 'string'"));
    const before = readTree(root);
    const result = runCli(['generate', backend]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`package.json: the "authstrap.clients" entry "${entry}" ${why}`);
    expect(readTree(root)).toEqual(before);
  });

  it('reads authstrap.clients from package.json: copies after the project\'s own, each once, relative paths only', () => {
    expect(clientOutputs({ name: 'api' })).toEqual({ paths: [clientFile], problems: [] });
    expect(clientOutputs({ authstrap: { clients: ['../web/src/lib/api.ts', '../web/./src/lib/api.ts', clientFile] } })).toEqual({
      paths: [clientFile, '../web/src/lib/api.ts'],
      problems: [],
    });
    expect(clientOutputs({ authstrap: { clients: '../web/src/lib/api.ts' } }).problems).toEqual([
      'package.json: "authstrap.clients" must be a list of paths to .ts files, relative to the backend folder',
    ]);
    expect(clientOutputs({ authstrap: { clients: ['/srv/web/api.ts', 'types.d.ts', 7] } }).problems).toEqual([
      'package.json: the "authstrap.clients" entry "/srv/web/api.ts" must be relative to the backend folder, e.g. "../web/src/lib/authstrap-client.ts"',
      'package.json: the "authstrap.clients" entry "types.d.ts" is not a .ts file (the client is TypeScript source)',
      'package.json: the "authstrap.clients" entry 7 is not a path',
    ]);
  });

  it('compiles under a strict frontend tsconfig for schemas with every field type, integer ids, nesting, and without auth', () => {
    const everyType = `export default {
  entities: {
    Folder: { parent: 'parentId', fields: { parentId: { type: 'uuid', references: 'Folder', nullable: true }, name: { type: 'string', searchable: true } } },
    Reading: {
      fields: {
        label: { type: 'text', description: 'Shown as is */ not code' },
        count: { type: 'integer', default: 0 },
        ratio: { type: 'number', nullable: true },
        done: { type: 'boolean' },
        takenAt: { type: 'datetime', default: 'now' },
        data: { type: 'json', nullable: true },
        kind: { type: 'enum', values: ['a', "it's"] },
      },
    },
    Catalog: { tenantScoped: false, fields: { title: { type: 'string' } } },
  },
};
`;
    const withoutAuth = `export default { auth: false, entities: { Legacy: { idType: 'integer', createdAt: false, updatedAt: false, fields: { note: { type: 'string' } } } } };\n`;
    const clients = [everyType, withoutAuth].map((schema) => path.join(workspace(schema).backend, clientFile));
    const withAuth = fs.readFileSync(clients[0]!, 'utf8');
    expect(withAuth).toContain('folders(parentId: string): FolderNestedApi;');
    expect(withAuth).toContain("kind: 'a' | 'it\\'s';");
    expect(withAuth).toContain('data: Json | null;');
    const noAuth = fs.readFileSync(clients[1]!, 'utf8');
    expect(noAuth).toContain('get(id: number): Promise<Legacy>;');
    expect(noAuth).not.toContain('auth: AuthApi');
    // A table without a creation time has no createdAfter to list by.
    expect(/export interface LegacyListParams [^}]*\}/.exec(noAuth)?.[0]).not.toContain('createdAfter');

    const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc');
    const flags = ['--noEmit', '--strict', '--exactOptionalPropertyTypes', '--noUncheckedIndexedAccess', '--noImplicitOverride', '--erasableSyntaxOnly', '--verbatimModuleSyntax', '--isolatedModules'];
    const result = spawnSync(process.execPath, [tsc, ...flags, '--target', 'ES2022', '--module', 'ESNext', '--moduleResolution', 'Bundler', '--lib', 'ES2022,DOM', ...clients], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
