import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { projectDir } from './support/backend.js';

/**
 * Objects made for every request keep one hidden class and fast properties. When they do not,
 * V8 makes a hidden class (or a property dictionary) per request, code that reads them loses its
 * fast paths, and the request's garbage lives past young-generation collections: on the list
 * route that cost 14 % of the requests per second and a full collection every two seconds
 * (bench/README.md, "A hidden class per request"). V8 answers for itself in a child process
 * (test/support/hidden-classes.probe.ts), since its `%` functions need --allow-natives-syntax.
 */
describe('hidden classes of per-request objects', () => {
  let found: Record<'listQueries' | 'requests' | 'responses', { sameHiddenClass: boolean; fastProperties: boolean; appPrototype?: boolean }>;
  beforeAll(async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', 'test/support/hidden-classes.probe.ts'], {
      cwd: projectDir,
      env: { PATH: process.env.PATH, NODE_ENV: 'test' },
      timeout: 60_000,
    });
    found = JSON.parse(stdout.trim().split('\n').at(-1)!);
  }, 70_000);

  it('parsed list parameters share one hidden class, whatever parameters were given', () => {
    expect(found.listQueries).toEqual({ sameHiddenClass: true, fastProperties: true });
  });

  it("requests and responses are the app's, with one hidden class and fast properties each", () => {
    expect(found.requests).toEqual({ sameHiddenClass: true, fastProperties: true, appPrototype: true });
    expect(found.responses).toEqual({ sameHiddenClass: true, fastProperties: true, appPrototype: true });
  });
});
