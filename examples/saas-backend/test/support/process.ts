import { spawn, type ChildProcess } from 'node:child_process';
import { projectDir } from './backend.js';

export { accepts, freePort } from '../../../../bench/lib/loopback.mjs';

export interface BackendProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the URL once the backend logs that it listens; rejects if it exits first. */
  listening: Promise<string>;
  exited: Promise<number | null>;
}

/**
 * Runs the example (or a copy of it in `cwd`) as `npm start` does (`node --import tsx
 * src/index.ts`), in its own process, with `nodeArgs` before those.
 */
export function spawnBackend(env: Record<string, string>, cwd = projectDir, nodeArgs: string[] = []): BackendProcess {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/index.ts'], {
    cwd,
    env: { PATH: process.env.PATH, NODE_ENV: 'test', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', BCRYPT_COST: '4', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[^"\s]+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    exited.then((code) => reject(new Error(`backend exited with ${code} before listening:\n${output}`)));
  });
  listening.catch(() => {});
  return { child, output: () => output, listening, exited };
}
