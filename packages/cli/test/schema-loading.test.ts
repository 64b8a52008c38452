import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSchema, SchemaError } from '../src/schema/index.js';
import { readSchemaLiteral, readSchemaSource } from '../src/schema/read-literal.js';

const fileName = '/project/authstrap.schema.ts';
const read = (source: string) => readSchemaLiteral(fileName, source);

/** The message of the SchemaError that reading `source` throws. */
function readError(source: string): string {
  try {
    read(source);
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaError);
    return (error as SchemaError).message;
  }
  throw new Error('expected the schema to be refused');
}

describe('readSchemaLiteral: the forms a schema file may take', () => {
  const data = { auth: true, entities: { Project: { fields: { name: { type: 'string' } } } } };
  const literal = `{ auth: true, entities: { Project: { fields: { name: { type: 'string' } } } } }`;

  it('reads `export default { ... }`', () => {
    expect(read(`export default ${literal};`)).toEqual(data);
  });

  it('reads `export default { ... } satisfies X` and `as const`', () => {
    expect(read(`import type { SchemaFile } from 'authstrap';\nexport default ${literal} satisfies SchemaFile;`)).toEqual(data);
    expect(read(`export default (${literal}) as const;`)).toEqual(data);
  });

  it('reads `export default defineSchema({ ... })`', () => {
    expect(read(`import { defineSchema } from 'authstrap';\nexport default defineSchema(${literal});`)).toEqual(data);
  });

  it('reads `const schema = { ... }; export default schema`', () => {
    expect(read(`const schema = ${literal};\nexport default schema;`)).toEqual(data);
    expect(read(`const schema = defineSchema(${literal}) satisfies SchemaFile;\nexport default schema;`)).toEqual(data);
  });

  it('refuses `let schema = ...; export default schema`, which other code could change', () => {
    expect(readError(`let schema = ${literal};\nexport default schema;`)).toMatch(/authstrap\.schema\.ts:2:16: .*`schema` is computed/);
  });

  it('reports a file without a default export', () => {
    expect(readError(`export const schema = ${literal};`)).toMatch(/authstrap\.schema\.ts: no `export default/);
  });
});

describe('readSchemaLiteral: values', () => {
  it('reads strings, numbers, booleans, null, negative numbers and numeric separators', () => {
    const source = `export default {
      s: 'text', d: "double", t: \`plain template\`, n: 42, f: 1.5, neg: -7, big: 1_000_000, negFloat: -0.25,
      yes: true, no: false, nothing: null,
    };`;
    expect(read(source)).toEqual({
      s: 'text', d: 'double', t: 'plain template', n: 42, f: 1.5, neg: -7, big: 1_000_000, negFloat: -0.25,
      yes: true, no: false, nothing: null,
    });
  });

  it('reads nested arrays and quoted keys', () => {
    const source = `export default { uniqueTogether: [['providerId', 'accountId'], []], 'quoted-key': [[1, [2, -3]]] };`;
    expect(read(source)).toEqual({ uniqueTogether: [['providerId', 'accountId'], []], 'quoted-key': [[1, [2, -3]]] });
  });
});

describe('readSchemaLiteral: computed values are refused with file and line', () => {
  const cases: [string, string, RegExp][] = [
    ['an identifier', `const max = 10;\nexport default {\n  entities: {\n    maxLength: max,\n  },\n};`, /authstrap\.schema\.ts:4:16: .*`max` is computed/],
    ['a call with several arguments', `export default {\n  value: pick(1, 2),\n};`, /authstrap\.schema\.ts:2:10: .*`pick\(1, 2\)` is computed/],
    ['a call with one argument inside the data', `export default {\n  entities: {},\n  min: Math.abs(-5),\n};`, /authstrap\.schema\.ts:3:8: .*`Math\.abs\(-5\)` is computed/],
    ['a template string with a substitution', 'export default {\n  a: `x${1}`,\n};', /authstrap\.schema\.ts:2:6: .*is computed/],
    ['an object spread', `const base = {};\nexport default {\n  ...base,\n};`, /authstrap\.schema\.ts:3:3: only `key: value` properties .*`\.\.\.base`/],
    ['an array spread', `const more = [];\nexport default {\n  values: [\n    ...more,\n  ],\n};`, /authstrap\.schema\.ts:4:5: .*`\.\.\.more` is computed/],
    ['a shorthand property', `const fields = {};\nexport default {\n  fields,\n};`, /authstrap\.schema\.ts:3:3: only `key: value` properties/],
    ['a computed key', `const key = 'a';\nexport default {\n  [key]: 1,\n};`, /authstrap\.schema\.ts:3:3: property names must be written out/],
    ['a negated string', `export default {\n  n: -'5',\n};`, /authstrap\.schema\.ts:2:6: .*is computed/],
  ];
  it.each(cases)('refuses %s', (_what, source, message) => {
    expect(readError(source)).toMatch(message);
  });
});

describe('loadSchema', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-schema-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('says the schema file is not found and how to create a project', () => {
    const dir = tempDir();
    expect(() => loadSchema(dir)).toThrow(SchemaError);
    expect(() => loadSchema(dir)).toThrow(/authstrap\.schema\.ts: not found\..*`authstrap setup`/);
  });

  it('reads and validates the schema file of a project folder', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), `export default { entities: { Project: { fields: { name: { type: 'string' } } } } };\n`);
    const schema = loadSchema(dir);
    expect(schema.auth).toBe(true);
    expect(schema.entities.map((entity) => entity.name)).toContain('Project');
  });

  it('names the schema file, line and column in validation problems', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), `export default { entities: { Project: { fields: { name: { type: 'strng' } } } } };\n`);
    expect(() => loadSchema(dir)).toThrow(/^authstrap\.schema\.ts:1:59: entity "Project", field "name": "type" must be one of/);
  });

  it('reports an unknown key at its line and column', () => {
    const dir = tempDir();
    const source = `export default {\n  entities: {\n    Project: {\n      fields: {\n        name: { type: 'string' },\n      },\n      nmae: 'x',\n    },\n  },\n};\n`;
    fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), source);
    expect(() => loadSchema(dir)).toThrow(/^authstrap\.schema\.ts:7:7: entity "Project": unknown key "nmae" \(allowed: /);
  });

  it('reports a mistake in a rule at the line and column of the entry at fault', () => {
    const dir = tempDir();
    const source = `export default {\n  entities: {\n    Task: {\n      fields: { title: { type: 'string' } },\n      rules: {\n        update: ['owner', 'admn'],\n      },\n    },\n  },\n};\n`;
    fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), source);
    expect(() => loadSchema(dir)).toThrow(/^authstrap\.schema\.ts:6:27: entity "Task", rules, update: "admn" is not a role/);
  });

  describe('better-auth.schema.json beside it (written by the Better Auth adapter)', () => {
    const project = (betterAuth: unknown, entities = `Project: { fields: { name: { type: 'string' } } }`) => {
      const dir = tempDir();
      fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), `export default { entities: { ${entities} } };\n`);
      fs.writeFileSync(path.join(dir, 'better-auth.schema.json'), typeof betterAuth === 'string' ? betterAuth : JSON.stringify(betterAuth));
      return dir;
    };

    it('adds its entities: extensions of the built-in ones and service-only entities of its own', () => {
      const schema = loadSchema(
        project(
          {
            entities: {
              User: { fields: { plan: { type: 'text', nullable: true } } },
              twoFactor: { serviceOnly: true, fields: { secret: { type: 'text' }, userId: { type: 'uuid', references: 'User', onDelete: 'cascade' } } },
            },
          },
          `User: { fields: { nickname: { type: 'string', nullable: true } } }, Project: { fields: { name: { type: 'string' } } }`,
        ),
      );
      const user = schema.entities.find((entity) => entity.name === 'User')!;
      expect(user.fields.map((field) => field.name)).toEqual(expect.arrayContaining(['email', 'nickname', 'plan']));
      const twoFactor = schema.entities.find((entity) => entity.name === 'twoFactor')!;
      expect(twoFactor).toMatchObject({ serviceOnly: true, tenantScoped: false, path: '/two-factors' });
      expect(schema.entities.map((entity) => entity.name)).toContain('Project');
    });

    it('refuses an entity or a field defined in both files, and a file that is not the adapter\'s JSON', () => {
      expect(() => loadSchema(project({ entities: { Project: { fields: {} } } }))).toThrow(
        'better-auth.schema.json: entity "Project": is also defined in authstrap.schema.ts; keep it in one of them',
      );
      expect(() =>
        loadSchema(project({ entities: { User: { fields: { plan: { type: 'text', nullable: true } } } } }, `User: { fields: { plan: { type: 'string', nullable: true } } }`)),
      ).toThrow('better-auth.schema.json: entity "User", field "plan": is also added in authstrap.schema.ts; keep it in one of them');
      expect(() => loadSchema(project('{ not json'))).toThrow(/^better-auth\.schema\.json: not valid JSON .*npx authstrap-better-auth-schema/);
      expect(() => loadSchema(project({ tables: [] }))).toThrow('better-auth.schema.json: must be an object with "entities"');
    });
  });

  it('reports a missing key at the field or entity it belongs to', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'authstrap.schema.ts'), `export default {\n  entities: {\n    Project: {\n      fields: {\n        status: { type: 'enum' },\n      },\n    },\n    Task: {},\n  },\n};\n`);
    expect(() => loadSchema(dir)).toThrow(/authstrap\.schema\.ts:5:9: entity "Project", field "status": an enum needs "values"/);
    expect(() => loadSchema(dir)).toThrow(/authstrap\.schema\.ts:8:5: entity "Task": "fields" must be an object/);
  });
});

describe('readSchemaLiteral: a file that does not parse', () => {
  it('reports a missing comma with file, line, column and the compiler message', () => {
    const source = `export default {\n  entities: {\n    Project: { fields: { name: { type: 'string' } } }\n    Task: { fields: {} },\n  },\n};\n`;
    expect(readError(source)).toMatch(/^authstrap\.schema\.ts:4:5: ',' expected\./);
  });

  it('reports a missing closing brace instead of reading what the parser recovered', () => {
    const source = `export default {\n  entities: {\n    Project: { fields: { name: { type: 'string' } } },\n  },\n`;
    expect(readError(source)).toMatch(/^authstrap\.schema\.ts:5:1: '}' expected\./);
  });

  it('ignores type errors: only the syntax decides (imports need not be installed)', () => {
    expect(read(`import type { SchemaFile } from 'not-installed';\nexport default { entities: {} } satisfies SchemaFile;`)).toEqual({ entities: {} });
  });
});

describe('readSchemaSource: where each key is written', () => {
  it('locates every property by its path of keys, 1-based as editors count', () => {
    const { locate } = readSchemaSource(fileName, `export default {\n  entities: {\n    Project: {\n      fields: { name: { type: 'string' } },\n    },\n  },\n};\n`);
    expect(locate(['entities'])).toEqual({ line: 2, column: 3 });
    expect(locate(['entities', 'Project'])).toEqual({ line: 3, column: 5 });
    expect(locate(['entities', 'Project', 'fields', 'name', 'type'])).toEqual({ line: 4, column: 25 });
    expect(locate(['entities', 'Task'])).toBeUndefined();
  });
});
