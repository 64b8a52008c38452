import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectView } from '../src/generate/view-model.js';
import { validateSchema } from '../src/schema/validate.js';
import { exampleDir, runCli, tempDir } from './support/cli.js';

/**
 * Reads whose JSON PostgreSQL writes (listJson, findJsonById) are generated only where that JSON
 * is exactly what `pg` and JSON.stringify would send: the example's test/json-reads.test.ts checks
 * the bytes; this checks which entities get them, and that every kind of generated router compiles.
 */

const schemaFile = {
  auth: true,
  entities: {
    // Only json-exact types, in a table authstrap creates: PostgreSQL writes the JSON.
    Board: { fields: { name: { type: 'string' as const }, pinned: { type: 'boolean' as const }, closesAt: { type: 'datetime' as const, nullable: true } } },
    // Global, nested under another global entity.
    Tag: { tenantScoped: false, fields: { label: { type: 'string' as const } } },
    Alias: { tenantScoped: false, parent: 'tagId', fields: { tagId: { type: 'uuid' as const, references: 'Tag' }, label: { type: 'string' as const } } },
    // A float prints differently (1e+21 against 1e21), jsonb has its own spacing: objects as before.
    Reading: { fields: { value: { type: 'number' as const } } },
    // Tenant-scoped, nested under another tenant-scoped entity, objects (a float): the parent is
    // checked in the route's statement all the same.
    Sample: { parent: 'readingId', fields: { readingId: { type: 'uuid' as const, references: 'Reading' }, value: { type: 'number' as const } } },
    Event: { tenantScoped: false, fields: { payload: { type: 'json' as const } } },
    // A table named in the schema may have other column types than authstrap's (add-auth's tables).
    Legacy: { tenantScoped: false, table: 'legacy_things', fields: { name: { type: 'string' as const } } },
  },
};

describe('reads whose JSON PostgreSQL writes', () => {
  it('are generated for your own entities of json-exact types in tables authstrap creates, and no others', () => {
    const view = projectView(validateSchema(structuredClone(schemaFile)));
    const withJson = view.entities.filter((entity) => entity.jsonSelectList).map((entity) => entity.name);
    expect(withJson.sort()).toEqual(['Alias', 'Board', 'Tag']);
    const board = view.entities.find((entity) => entity.name === 'Board')!;
    expect(board.jsonSelectList).toBe(
      '"id", "organizationId", "name", "pinned", ${isoTimestamp(\'"closesAt"\')} AS "closesAt", ${isoTimestamp(\'"createdAt"\')} AS "createdAt", ${isoTimestamp(\'"updatedAt"\')} AS "updatedAt"',
    );
  });

  const created: string[] = [];
  afterAll(() => {
    for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('compiles for tenant-scoped, global and nested entities, with and without them', () => {
    const dir = path.join(tempDir(), 'backend');
    created.push(path.dirname(dir));
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), `export default ${JSON.stringify(schemaFile, null, 2)};\n`);
    const generated = runCli(['generate', dir]);
    expect(generated.status, generated.output).toBe(0);

    const router = (folder: string, file: string) => fs.readFileSync(path.join(dir, 'src/generated', folder, `${file}.router.ts`), 'utf8');
    expect(router('Board', 'board')).toContain('sendJsonList(res, await boardRepository.listJson(asCaller(db, req), query));');
    expect(router('Alias', 'alias')).toContain('sendJsonList(res, await aliasRepository.listJson(db, query, { tagId }));');
    expect(router('Reading', 'reading')).toContain('sendList(res, await readingRepository.list(asCaller(db, req), query));');
    expect(router('Sample', 'sample')).toContain('sendList(res, await sampleRepository.list(caller, query, { readingId: parent.id }));');
    expect(router('Sample', 'sample')).toContain('const caller = asCaller(db, req, parent);');
    for (const [folder, file] of [['Event', 'event'], ['Legacy', 'legacy']] as const) expect(router(folder, file)).not.toContain('Json');

    // The example's installed packages serve this project's imports.
    fs.symlinkSync(path.join(exampleDir, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    const tsc = spawnSync(process.execPath, [path.join(exampleDir, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8' });
    expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
  }, 120_000);
});
