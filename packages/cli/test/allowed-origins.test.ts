import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { allowedOrigins, allowsOrigin, originOf } from '../src/project/allowed-origins.js';
import { repoRoot } from './support/cli.js';

/**
 * The backend's own reading of ALLOWED_ORIGINS: `parseOrigins` taken from the template's
 * config.ts and run as it is (it needs nothing but URL), so that the CLI's copy is compared with
 * the code every generated backend runs, not with a description of it.
 */
function backendParseOrigins(): (list: string | undefined, problems: string[]) => string[] {
  const file = path.join(repoRoot, 'templates/backend/project/src/config.ts');
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const declaration = source.statements.find((statement) => ts.isFunctionDeclaration(statement) && statement.name?.text === 'parseOrigins');
  if (!declaration) throw new Error('templates/backend/project/src/config.ts has no function parseOrigins any more: update this test and src/project/allowed-origins.ts');
  const javascript = ts.transpileModule(declaration.getText(source), { compilerOptions: { target: ts.ScriptTarget.ES2022 } }).outputText;
  return new Function(`${javascript}\nreturn parseOrigins;`)();
}

const entries = [
  'http://localhost:5173',
  'http://localhost:5173/',
  'HTTP://LocalHost:5173',
  'https://app.example.com:443',
  'https://app.example.com:443/',
  'http://[::1]:3000',
  'http://127.0.0.1:3000/',
  'http://localhost:5173/app',
  'http://localhost:5173?x=1',
  'http://localhost:5173/#top',
  'http://user:pw@localhost:5173',
  '*',
  'localhost:5173',
  'file:///tmp/x',
  'null',
  '  http://localhost:3001  ',
];

describe('ALLOWED_ORIGINS: the CLI reads it as the backend does', () => {
  const parseOrigins = backendParseOrigins();

  it.each(entries)('%j', (entry) => {
    const problems: string[] = [];
    const backend = parseOrigins(entry, problems);
    const cli = allowedOrigins({ ALLOWED_ORIGINS: entry });
    expect(cli.map((item) => item.origin).filter(Boolean)).toEqual(backend);
    expect(cli.filter((item) => item.origin === undefined)).toHaveLength(problems.length);
  });

  it('the whole list at once, blanks and spaces included', () => {
    const list = ` ${entries.join(' , ')},,`;
    const problems: string[] = [];
    const backend = parseOrigins(list, problems);
    const cli = allowedOrigins({ ALLOWED_ORIGINS: list });
    expect(cli.flatMap((item) => (item.origin ? [item.origin] : []))).toEqual(backend);
    expect(cli.filter((item) => item.origin === undefined).map((item) => item.entry)).toEqual(problems.map((problem) => /"(.*)"/.exec(problem)![1]));
  });

  it('a trailing slash, upper case or a default port allow the origin browsers send', () => {
    for (const written of ['http://localhost:5173/', 'HTTP://LOCALHOST:5173', 'http://localhost:5173']) {
      expect(allowsOrigin(allowedOrigins({ ALLOWED_ORIGINS: written }), 'http://localhost:5173'), written).toBe(true);
    }
    expect(allowsOrigin(allowedOrigins({ ALLOWED_ORIGINS: 'https://app.example.com:443' }), 'https://app.example.com')).toBe(true);
    expect(allowsOrigin(allowedOrigins({ ALLOWED_ORIGINS: 'http://localhost:5173/app' }), 'http://localhost:5173')).toBe(false);
    expect(originOf('*')).toBeUndefined();
  });
});
