import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { projectDir } from './backend.js';

export interface BackendProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the URL once the backend logs that it listens; rejects if it exits first. */
  listening: Promise<string>;
  exited: Promise<number | null>;
}

/**
 * Runs the example (or a copy of it in `cwd`) as `npm start` does (`node --import tsx
 * src/index.ts`), in its own process.
 */
export function spawnBackend(env: Record<string, string>, cwd = projectDir): BackendProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/index.ts'], {
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

/** A port nothing listens on now (the kernel's choice), for a server the test starts next. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port` now. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
