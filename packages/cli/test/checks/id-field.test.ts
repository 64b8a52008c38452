import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { clientTypesLackingId, lacksIds } from '../../src/checks/id-field.js';
import { describeRepairCycle } from '../support/check-cycle.js';
import { exampleDir } from '../support/cli.js';
import { breakFile } from '../support/example-copies.js';

const schemaFile = 'src/generated/Project/project.schema.ts';
const original = fs.readFileSync(path.join(exampleDir, schemaFile), 'utf8');
const outputId = '    id: z.uuid(),\n';
const inputId = '    id: z.uuid().optional(),\n';

describe('id-field reads the generated schema files as syntax', () => {
  it('finds id in the output type and the create input of the example', () => {
    expect(lacksIds(schemaFile, original)).toBe(false);
  });

  it.each([
    ['the output type', original.replace(outputId, '')],
    ['the create input', original.replace(inputId, '')],
    ['the create input, commented out', original.replace(inputId, `    // ${inputId.trimStart()}`)],
    ['both', original.replace(outputId, '').replace(inputId, '')],
  ])('finds id missing from %s', (_name, broken) => {
    expect(broken).not.toBe(original);
    expect(lacksIds(schemaFile, broken)).toBe(true);
  });
});

const clientFile = 'client/authstrap-client.ts';
const client = fs.readFileSync(path.join(exampleDir, clientFile), 'utf8');
const projectType = 'export interface Project {\n  id: string;\n';
const projectCreateId = 'export interface ProjectCreateInput {\n  /** Chosen by the caller; the backend picks one when it is left out. */\n  id?: string;\n';
const withoutLine = (text: string, block: string, line: RegExp) => {
  if (!text.includes(block)) throw new Error(`${clientFile} of the example no longer has ${JSON.stringify(block)}: update this test`);
  return text.replace(block, block.replace(line, ''));
};

describe('id-field reads the typed client as syntax, against what generate writes', () => {
  it("finds every id in the example's client", () => {
    expect(clientTypesLackingId(client, client)).toEqual([]);
  });

  it.each([
    ['Project', withoutLine(client, projectType, /  id: string;\n/), ['Project']],
    ['ProjectCreateInput', withoutLine(client, projectCreateId, /  \/\*\*.*\*\/\n  id\?: string;\n/), ['ProjectCreateInput']],
    ['both, the output type commented out', withoutLine(withoutLine(client, projectType, /  id: string;\n/), projectCreateId, /  id\?: string;\n/).replace('export interface Project {\n', 'export interface Project {\n  // id: string;\n'), ['Project', 'ProjectCreateInput']],
  ])('finds id missing from %s', (_name, broken, types) => {
    expect(broken).not.toBe(client);
    expect(clientTypesLackingId(broken, client)).toEqual(types);
  });

  it('a missing client file, or a type gone altogether, is not an id problem', () => {
    expect(clientTypesLackingId('', client)).toEqual([]);
    expect(clientTypesLackingId(client.replace(/export interface Project \{[^}]*\}\n/, ''), client)).toEqual([]);
  });
});

const { stage } = describeRepairCycle('id-field', [
  {
    // Without the create input's id as well, the backend would not start (its replace input omits id).
    name: 'Project without id in its output type',
    planShows: [`--- a/${schemaFile}`],
    breakFiles: (dir) => breakFile(dir, schemaFile, outputId),
  },
  {
    // The backend runs as before: only what the client's users see has lost the id.
    name: 'Project without id in the typed client',
    planShows: [`--- a/${clientFile}`, '+  id: string;'],
    breakFiles: (dir) => breakFile(dir, clientFile, projectType, 'export interface Project {\n'),
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('id-field: what verify and fix say', () => {
  it('verify reads the missing id from the running backend too, and the repair is the file generate writes', () => {
    const name = 'Project without id in its output type';
    const check = stage(name, 'verifyBefore').report.checks.find((result) => result.id === 'id-field')!;
    expect(check.message).toBe(`${schemaFile} lacks id in the output or create type; the running backend has no id in Project records`);
    expect(stage(name, 'treeAfterFirst').get(schemaFile)).toBe(original);
  });

  it('verify names the client and the type; the repair is the client generate writes', () => {
    const name = 'Project without id in the typed client';
    const check = stage(name, 'verifyBefore').report.checks.find((result) => result.id === 'id-field')!;
    expect(check.message).toBe(`${clientFile} (Project) lacks id in the output or create type`);
    expect(stage(name, 'treeAfterFirst').get(clientFile)).toBe(client);
  });
});
