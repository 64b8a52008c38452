import util from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseEnv, withEnvValue } from '../src/project/env-file.js';

// The backend reads .env with process.loadEnvFile, whose parser util.parseEnv exposes: verify and
// fix must read it the same way, and fix must edit the line that parser takes.

describe('parseEnv', () => {
  it("reads a .env exactly as Node's loader does, quirks included (the backend reads .env with it)", () => {
    const text = [
      '# comment',
      'PORT=3000 # the port',
      'export SECRET=abc-_123',
      'A="two words" # note',
      "B='single # kept'",
      'C=',
      'D= # set me',
      'E=a#b',
      '  F = spaced  ',
      'DATABASE_URL=postgresql://app:p%40ss@db:5432/app?sslmode=require',
      'not an assignment',
      'G=1',
      'H="a\\nb"',
      'I=1',
      'I=2',
      'J="unbalanced',
    ].join('\n');
    expect(parseEnv(text)).toEqual({ ...util.parseEnv(text) });
    expect(parseEnv(text)).toMatchObject({ PORT: '3000', SECRET: 'abc-_123', A: 'two words', B: 'single # kept', C: '', D: '', E: 'a', F: 'spaced', I: '2' });
  });

  it('handles CRLF line endings', () => {
    expect(parseEnv('A=1\r\nB=2\r\n')).toEqual({ A: '1', B: '2' });
  });
});

describe('withEnvValue edits the line the backend reads', () => {
  const origins = 'http://localhost:5173,http://localhost:5200';
  it.each([
    ['a plain line', 'A=1\nALLOWED_ORIGINS=http://localhost:5173\nB=2\n', `A=1\nALLOWED_ORIGINS=${origins}\nB=2\n`],
    ['no line: one appended', 'A=1\n', `A=1\nALLOWED_ORIGINS=${origins}\n`],
    ['no line, no final newline', 'A=1', `A=1\nALLOWED_ORIGINS=${origins}\n`],
    ['an empty file', '', `ALLOWED_ORIGINS=${origins}\n`],
    [
      'a repeated key: the last line is set, the earlier one commented out',
      'ALLOWED_ORIGINS=http://localhost:3000\nA=1\nALLOWED_ORIGINS=http://localhost:5173\n',
      `# ALLOWED_ORIGINS=http://localhost:3000\nA=1\nALLOWED_ORIGINS=${origins}\n`,
    ],
    ['export kept', 'export ALLOWED_ORIGINS=http://localhost:5173\n', `export ALLOWED_ORIGINS=${origins}\n`],
    ['spaces around = kept', 'ALLOWED_ORIGINS = http://localhost:5173\n', `ALLOWED_ORIGINS = ${origins}\n`],
    ['double quotes and a comment kept', 'ALLOWED_ORIGINS="http://localhost:5173" # the web app\n', `ALLOWED_ORIGINS="${origins}" # the web app\n`],
    ["single quotes kept", "ALLOWED_ORIGINS='http://localhost:5173'\n", `ALLOWED_ORIGINS='${origins}'\n`],
    ['a comment after an unquoted value kept', 'ALLOWED_ORIGINS=http://localhost:5173 # dev\n', `ALLOWED_ORIGINS=${origins} # dev\n`],
    ['CRLF kept', 'A=1\r\nALLOWED_ORIGINS=http://localhost:5173\r\n', `A=1\r\nALLOWED_ORIGINS=${origins}\r\n`],
    [
      'every shape at once, repeated',
      'export ALLOWED_ORIGINS="http://localhost:1" # old\nALLOWED_ORIGINS = http://localhost:5173 # new\n',
      `# export ALLOWED_ORIGINS="http://localhost:1" # old\nALLOWED_ORIGINS = ${origins} # new\n`,
    ],
  ])('%s', (_name, before, after) => {
    expect(withEnvValue(before, 'ALLOWED_ORIGINS', origins)).toBe(after);
    expect(parseEnv(after).ALLOWED_ORIGINS).toBe(origins);
  });

  it('a value that needs quotes gets them', () => {
    const after = withEnvValue('SECRET=old\n', 'SECRET', 'a#b c')!;
    expect(parseEnv(after).SECRET).toBe('a#b c');
  });

  it('a line that only looks like the last one (inside a multi-line quoted value) is not the one edited', () => {
    // Node reads A as the two lines between the quotes, so the second ALLOWED_ORIGINS is part of A.
    const before = 'ALLOWED_ORIGINS=http://localhost:5173\nA="first\nALLOWED_ORIGINS=http://inside.example"\n';
    expect(parseEnv(before)).toEqual({ ALLOWED_ORIGINS: 'http://localhost:5173', A: 'first\nALLOWED_ORIGINS=http://inside.example' });
    const after = withEnvValue(before, 'ALLOWED_ORIGINS', origins)!;
    expect(parseEnv(after)).toEqual({ ALLOWED_ORIGINS: origins, A: 'first\nALLOWED_ORIGINS=http://inside.example' });
  });
});
