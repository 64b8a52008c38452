import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { userEnv } from '../../../../scripts/packed-package.mjs';
import { cliPath } from './cli.js';

/** Helpers for running `authstrap setup` as a user would: a process, a real backend, a real terminal. */

const ansi = /\x1b\[[0-?]*[ -/]*[@-~]/g;
export const stripAnsi = (text: string) => text.replace(ansi, '');

/** The environment of a user's shell (what npm, pnpm and vitest add taken out): shared with `npm run release`. */
export { userEnv };

export interface CliRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout + stderr without colour codes. */
  output: string;
  ms: number;
}

/**
 * The built CLI as a process with no terminal: stdin ignored, so that a prompt could never be
 * answered, and a timeout, so that a run that waits for input anyway fails instead of hanging.
 */
export function runCliProcess(args: string[], options: { cwd: string; timeoutMs?: number; env?: NodeJS.ProcessEnv }): CliRun {
  if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} is missing: build the CLI first (pnpm --filter authstrap run build)`);
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 30_000;
  const result = spawnSync(process.execPath, [cliPath, ...args], {
    cwd: options.cwd,
    env: options.env ?? userEnv(),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    maxBuffer: 64 * 1024 * 1024,
  });
  const stdout = stripAnsi(result.stdout ?? '');
  const stderr = stripAnsi(result.stderr ?? '');
  const timedOut = (result.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT' ? `\n[killed: no exit within ${timeoutMs} ms]` : '';
  return { status: result.status, signal: result.signal, stdout, stderr, output: stdout + stderr + timedOut, ms: Date.now() - started };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** True when nothing accepts connections on 127.0.0.1:port. */
export function nothingListensOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

/** Every path below `dir` (folders end in "/"), not following symlinks: to see that nothing was written. */
export function listing(dir: string): string[] {
  const found: string[] = [];
  const walk = (current: string) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const relative = path.relative(dir, path.join(current, entry.name)).split(path.sep).join('/');
      if (entry.isDirectory()) {
        found.push(`${relative}/`);
        walk(path.join(current, entry.name));
      } else found.push(relative);
    }
  };
  walk(dir);
  return found.sort();
}

/** The live (not zombie) processes of a process group; on Linux from /proc, elsewhere by signal 0. */
export function processGroupMembers(pgid: number): number[] {
  if (process.platform !== 'linux') {
    try {
      process.kill(-pgid, 0);
      return [pgid];
    } catch {
      return [];
    }
  }
  const members: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const [state, , group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(group) === pgid && state !== 'Z') members.push(Number(name));
  }
  return members;
}

async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export interface StartedProject {
  pgid: number;
  output(): string;
  /** SIGTERM to the whole group (npm, its shell, node); throws if anything outlives it. */
  stop(): Promise<void>;
}

/**
 * `npm start` in a project, as its README says, in a process group of its own (npm starts node
 * through a shell: killing npm alone could leave the backend running). Resolves once `readyPath`
 * (the backend's /ready; a frontend's page) answers 2xx.
 */
export async function startWithNpm(dir: string, port: number, timeoutMs = 60_000, readyPath = '/ready'): Promise<StartedProject> {
  const child = spawn('npm', ['start'], { cwd: dir, env: userEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const pgid = child.pid!;
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let exited = false;
  child.once('exit', () => (exited = true));
  child.once('error', (error) => {
    exited = true;
    output += `\n${error.message}`;
  });

  let stopped = false;
  const project: StartedProject = {
    pgid,
    output: () => output,
    async stop() {
      if (stopped) return;
      stopped = true;
      const signal = (name: NodeJS.Signals) => {
        try {
          process.kill(-pgid, name);
        } catch {
          // the group is gone already
        }
      };
      signal('SIGTERM');
      if (!(await waitUntil(() => processGroupMembers(pgid).length === 0, 15_000))) {
        signal('SIGKILL');
        await waitUntil(() => processGroupMembers(pgid).length === 0, 5_000);
        throw new Error(`npm start (process group ${pgid}) was still running 15 s after SIGTERM; killed it`);
      }
    },
  };

  const ready = await waitUntil(async () => {
    if (exited) return true;
    try {
      return (await fetch(`http://127.0.0.1:${port}${readyPath}`, { signal: AbortSignal.timeout(2000) })).ok;
    } catch {
      return false;
    }
  }, timeoutMs, 200);
  if (exited || !ready) {
    await project.stop().catch(() => {});
    throw new Error(`npm start in ${dir} ${exited ? 'exited' : `was not ready within ${timeoutMs} ms`}; its output:\n${output}`);
  }
  return project;
}

/** Single-quoted for sh. */
export const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/** Fails (never skips) when tmux is missing: the interactive tests need a real terminal. */
export function requireTmux(): void {
  const found = spawnSync('tmux', ['-V'], { encoding: 'utf8' });
  if (found.error || found.status !== 0) {
    throw new Error('tmux is not installed, and the interactive setup tests drive a real terminal with it: install it (apt-get update && apt-get install -y tmux; .ci/run does)');
  }
}

/**
 * One detached tmux session on a tmux server of its own (its own socket, no user config), with a
 * fixed size. The command's exit code is printed after it as `[exit N]`, and the pane stays open
 * so that the last screen can be read.
 */
export class TmuxSession {
  private readonly socket = `authstrap-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  readonly name = 'setup';

  constructor(command: string, cwd: string, env: NodeJS.ProcessEnv = userEnv()) {
    const wrapped = `${command}; echo "[exit $?]"; sleep 600`;
    this.tmux(['-f', '/dev/null', 'new-session', '-d', '-s', this.name, '-x', '120', '-y', '40', '-c', cwd, wrapped], env);
    this.socketPath = this.tmux(['display-message', '-p', '#{socket_path}']).trim();
  }

  /** The server's socket file, removed by kill(): tmux leaves it behind. */
  private readonly socketPath: string;

  private tmux(args: string[], env?: NodeJS.ProcessEnv): string {
    const result = spawnSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8', env: env ?? userEnv(), timeout: 10_000 });
    if (result.error || result.status !== 0) throw new Error(`tmux ${args.join(' ')} failed: ${result.error?.message ?? result.stderr}`);
    return result.stdout;
  }

  /** The screen as text, wrapped lines joined, trailing blank lines dropped. */
  capture(): string {
    return this.tmux(['capture-pane', '-p', '-J', '-t', this.name]).replace(/\s+$/, '');
  }

  /** Keys by tmux name (Enter, Down, C-c). */
  keys(...keys: string[]): void {
    this.tmux(['send-keys', '-t', this.name, ...keys]);
  }

  /** Text typed literally (no key names), then Enter. */
  answer(text: string): void {
    if (text) this.tmux(['send-keys', '-t', this.name, '-l', text]);
    this.keys('Enter');
  }

  /** Polls the screen until it shows `expected`; fails with the screen after `timeoutMs`. */
  async waitFor(expected: string | RegExp, timeoutMs = 15_000): Promise<string> {
    let screen = '';
    const seen = await waitUntil(() => {
      screen = this.capture();
      return typeof expected === 'string' ? screen.includes(expected) : expected.test(screen);
    }, timeoutMs);
    if (!seen) throw new Error(`waited ${timeoutMs} ms for ${String(expected)} on the terminal; it shows:\n${screen}`);
    return screen;
  }

  /** Waits for the command to end; its exit code. */
  async exitCode(timeoutMs = 30_000): Promise<number> {
    const screen = await this.waitFor(/\[exit \d+\]/, timeoutMs);
    return Number(/\[exit (\d+)\]/.exec(screen)![1]);
  }

  /** Ends the session and this test's tmux server. */
  kill(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-session', '-t', this.name], { timeout: 10_000 });
    spawnSync('tmux', ['-L', this.socket, 'kill-server'], { timeout: 10_000 });
    if (this.socketPath) fs.rmSync(this.socketPath, { force: true });
  }
}
