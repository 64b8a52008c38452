// Types of packed-package.mjs, for the tests that import it.
export function runCommand(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): { status: number | null; stdout: string; output: string };
export function packPackage(dir: string, destination: string, options?: { env?: NodeJS.ProcessEnv; timeoutMs?: number }): { tarball: string; files: string[] };
export function userEnv(extra?: Record<string, string>): NodeJS.ProcessEnv;
