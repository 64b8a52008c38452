import { describe, expect, it } from 'vitest';
import { findLoopbackMix, loopbackHosts, withLocalhost } from '../src/project/loopback-hosts.js';

const backendEnv = (text: string) => ({ path: '.env', text });
const webEnv = (text: string) => ({ path: 'web/.env.local', text });

describe('findLoopbackMix', () => {
  it.each([
    ['127.0.0.1', 'AUTH_URL=http://127.0.0.1:3000\nALLOWED_ORIGINS=http://localhost:5173\n'],
    ['[::1]', 'AUTH_URL=http://[::1]:3000\nALLOWED_ORIGINS=http://localhost:5173\n'],
    ['0.0.0.0', 'AUTH_URL=http://0.0.0.0:3000\nALLOWED_ORIGINS=http://localhost:5173\n'],
    ['127.0.0.1', 'AUTH_URL=http://localhost:3000\nALLOWED_ORIGINS=http://localhost:5173,http://127.0.0.1:5173\n'],
  ])('finds localhost mixed with %s in the backend .env', (other, text) => {
    const mix = findLoopbackMix(backendEnv(text));
    expect(mix?.hosts.map((entry) => entry.host)).toEqual(['localhost', other]);
    expect(mix?.message).toContain(`localhost and ${other} are mixed`);
    expect(mix?.message).toContain('different sites');
  });

  it('names every variable and file involved, backend and frontend', () => {
    const mix = findLoopbackMix(backendEnv('AUTH_URL=http://localhost:3000\nALLOWED_ORIGINS=http://localhost:3001\n'), [
      webEnv('BETTER_AUTH_URL=http://localhost:3001\nAUTHSTRAP_URL=http://localhost:3000\nNEXT_PUBLIC_AUTHSTRAP_URL=http://127.0.0.1:3000\n'),
    ]);
    expect(mix?.message).toBe(
      'localhost and 127.0.0.1 are mixed (localhost: AUTH_URL in .env, ALLOWED_ORIGINS in .env, BETTER_AUTH_URL in web/.env.local, AUTHSTRAP_URL in web/.env.local; ' +
        '127.0.0.1: NEXT_PUBLIC_AUTHSTRAP_URL in web/.env.local): browsers treat them as different sites, so the session cookie set by one is not sent from a page on the other ' +
        'and every request after sign-in is 401; use localhost everywhere',
    );
    expect(mix?.rewritten).toEqual(['NEXT_PUBLIC_AUTHSTRAP_URL in web/.env.local']);
    // Only the frontend file changes: the backend's already says localhost.
    expect(mix?.files).toEqual([
      {
        path: 'web/.env.local',
        before: 'BETTER_AUTH_URL=http://localhost:3001\nAUTHSTRAP_URL=http://localhost:3000\nNEXT_PUBLIC_AUTHSTRAP_URL=http://127.0.0.1:3000\n',
        after: 'BETTER_AUTH_URL=http://localhost:3001\nAUTHSTRAP_URL=http://localhost:3000\nNEXT_PUBLIC_AUTHSTRAP_URL=http://localhost:3000\n',
      },
    ]);
  });

  it('finds a mix that only shows across backend and frontend', () => {
    const mix = findLoopbackMix(backendEnv('AUTH_URL=http://127.0.0.1:3000\nALLOWED_ORIGINS=http://127.0.0.1:3001\n'), [webEnv('BETTER_AUTH_URL=http://localhost:3001\n')]);
    expect(mix?.rewritten).toEqual(['AUTH_URL in .env', 'ALLOWED_ORIGINS in .env']);
    expect(mix?.files.map((file) => [file.path, file.after])).toEqual([['.env', 'AUTH_URL=http://localhost:3000\nALLOWED_ORIGINS=http://localhost:3001\n']]);
  });

  it.each([
    ['all localhost', 'AUTH_URL=http://localhost:3000\nALLOWED_ORIGINS=http://localhost:5173,http://LOCALHOST:3001\n', 'NEXT_PUBLIC_AUTHSTRAP_URL=http://localhost:3000\n'],
    ['all 127.0.0.1 (one site, it works)', 'AUTH_URL=http://127.0.0.1:3000\nALLOWED_ORIGINS=http://127.0.0.1:5173\n', 'AUTHSTRAP_URL=http://127.0.0.1:3000\n'],
    ['real domains', 'AUTH_URL=https://api.example.com\nALLOWED_ORIGINS=https://app.example.com,https://127.0.0.1.nip.io\n', 'NEXT_PUBLIC_AUTHSTRAP_URL=https://api.example.com\n'],
    ['localhost and a real domain', 'AUTH_URL=https://api.example.com\nALLOWED_ORIGINS=https://app.example.com,http://localhost:5173\n', ''],
    ['no URLs at all', 'ALLOWED_ORIGINS=*\n', ''],
  ])('raises no alarm for %s', (_name, backend, frontend) => {
    expect(findLoopbackMix(backendEnv(backend), [webEnv(frontend)])).toBeUndefined();
  });

  it('reads only the URL settings: other variables and comments may name any host', () => {
    const text = 'AUTH_URL=http://localhost:3000 # not http://127.0.0.1:3000\nDATABASE_URL=postgresql://app@127.0.0.1:5432/app\nREDIS_URL=redis://127.0.0.1:6379\n';
    expect(findLoopbackMix(backendEnv(text))).toBeUndefined();
    // The frontend variables count in a frontend's file, not in the backend's .env.
    expect(findLoopbackMix(backendEnv('AUTH_URL=http://localhost:3000\nNEXT_PUBLIC_AUTHSTRAP_URL=http://127.0.0.1:3000\n'))).toBeUndefined();
  });

  it('reads values as the backend does: the last of a repeated variable, quotes, export', () => {
    expect(loopbackHosts(backendEnv('AUTH_URL=http://127.0.0.1:3000\nAUTH_URL="http://localhost:3000"\n')).map((entry) => entry.host)).toEqual(['localhost']);
    expect(findLoopbackMix(backendEnv("export AUTH_URL='http://127.0.0.1:3000'\nALLOWED_ORIGINS=http://localhost:5173\n"))?.rewritten).toEqual(['AUTH_URL in .env']);
  });
});

describe('the repair: every loopback host becomes localhost', () => {
  it('keeps scheme, port, path, quotes, comments and every other line', () => {
    const before = [
      '# Read at startup',
      'NODE_ENV=development',
      'AUTH_URL="https://127.0.0.1:8443/api/" # the API',
      'DATABASE_URL=postgresql://app@127.0.0.1:5432/app',
      'ALLOWED_ORIGINS=http://[::1]:5173, https://app.example.com,http://0.0.0.0:3001',
      '',
    ].join('\r\n');
    const after = withLocalhost(before, ['AUTH_URL', 'ALLOWED_ORIGINS']);
    expect(after).toBe(
      [
        '# Read at startup',
        'NODE_ENV=development',
        'AUTH_URL="https://localhost:8443/api/" # the API',
        'DATABASE_URL=postgresql://app@127.0.0.1:5432/app',
        'ALLOWED_ORIGINS=http://localhost:5173, https://app.example.com,http://localhost:3001',
        '',
      ].join('\r\n'),
    );
  });

  it('keeps an origin once when the rewrite makes two the same', () => {
    expect(withLocalhost('ALLOWED_ORIGINS=http://127.0.0.1:5173,http://localhost:5173,http://localhost:3001\n', ['ALLOWED_ORIGINS'])).toBe(
      'ALLOWED_ORIGINS=http://localhost:5173,http://localhost:3001\n',
    );
  });

  it('rewrites the line the backend reads (the last), in its shape, and comments out the earlier ones', () => {
    const before = 'AUTH_URL=http://localhost:3000\nexport AUTH_URL = "http://127.0.0.1:3000" # the API\n';
    expect(findLoopbackMix(backendEnv(before))).toBeUndefined();
    expect(findLoopbackMix(backendEnv(`${before}ALLOWED_ORIGINS=http://localhost:5173\n`))?.files[0]?.after).toBe(
      '# AUTH_URL=http://localhost:3000\nexport AUTH_URL = "http://localhost:3000" # the API\nALLOWED_ORIGINS=http://localhost:5173\n',
    );
  });

  it('leaves a file without loopback hosts byte for byte', () => {
    const text = 'AUTH_URL=https://api.example.com\nALLOWED_ORIGINS=https://app.example.com, https://admin.example.com\n';
    expect(withLocalhost(text, ['AUTH_URL', 'ALLOWED_ORIGINS'])).toBe(text);
  });

  it('is done after one pass: the repaired files have no mix', () => {
    const backend = backendEnv('AUTH_URL=http://127.0.0.1:3000\nALLOWED_ORIGINS=http://localhost:3001\n');
    const frontend = webEnv('NEXT_PUBLIC_AUTHSTRAP_URL=http://[::1]:3000\n');
    const mix = findLoopbackMix(backend, [frontend])!;
    const repaired = (file: { path: string; text: string }) => ({ ...file, text: mix.files.find((change) => change.path === file.path)?.after ?? file.text });
    expect(mix.files.map((file) => file.path)).toEqual(['.env', 'web/.env.local']);
    expect(findLoopbackMix(repaired(backend), [repaired(frontend)])).toBeUndefined();
  });
});
