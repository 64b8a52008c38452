import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lacksIds } from '../../src/checks/id-field.js';
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

const { stage } = describeRepairCycle('id-field', [
  {
    // Without the create input's id as well, the backend would not start (its replace input omits id).
    name: 'Project without id in its output type',
    planShows: [`--- a/${schemaFile}`],
    breakFiles: (dir) => breakFile(dir, schemaFile, outputId),
  },
]);

describe.runIf(process.env.AUTHSTRAP_TEST_POSTGRES_URL)('id-field: what verify and fix say', () => {
  it('verify reads the missing id from the running backend too, and the repair is the file generate writes', () => {
    const name = 'Project without id in its output type';
    const check = stage(name, 'verifyBefore').report.checks.find((result) => result.id === 'id-field')!;
    expect(check.message).toBe(`${schemaFile} lacks id in the output or create type; the running backend has no id in Project records`);
    expect(stage(name, 'treeAfterFirst').get(schemaFile)).toBe(original);
  });
});
