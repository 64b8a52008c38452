import path from 'node:path';
import { CliError } from '../cli-error.js';

/** Everything `authstrap setup` needs to know, checked. */
export interface SetupSettings {
  projectName: string;
  dir: string;
  backendPort: number;
  frontendPort: number;
  database: { kind: 'embedded' } | { kind: 'postgres'; url: string };
  install: boolean;
  start: boolean;
  force: boolean;
  packageManager: PackageManager;
  /** A Next.js frontend to create (a new or empty folder) or connect (an existing app). */
  frontendDir?: string;
}

export const packageManagers = ['npm', 'pnpm', 'yarn', 'bun'] as const;
export type PackageManager = (typeof packageManagers)[number];

/** The flags as commander hands them over (strings, or booleans for switches). */
export interface SetupFlags {
  projectName?: string;
  backendPort?: string;
  frontendPort?: string;
  databaseUrl?: string;
  db?: string;
  dir?: string;
  yes?: boolean;
  install?: boolean;
  start?: boolean;
  force?: boolean;
  packageManager?: string;
  /** `--frontend [dir]`: true without a folder (then `<project-name>-web` beside the backend). */
  frontend?: string | boolean;
  /** With --frontend in an existing backend: print what would change, change nothing. */
  dryRun?: boolean;
  /** Print one JSON document on stdout (progress goes to stderr). */
  json?: boolean;
}

/** The package manager that ran us: `npm_config_user_agent` is e.g. `pnpm/10.1.0 npm/? node/v20.19.0`. */
export function detectPackageManager(userAgent: string | undefined): PackageManager {
  const name = userAgent?.split('/')[0];
  return packageManagers.find((manager) => manager === name) ?? 'npm';
}

const projectNamePattern = /^[a-z0-9][a-z0-9._-]{0,213}$/;

export function parsePort(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) {
    throw new CliError(`${flag} must be a whole number from 1 to 65535 (got "${value}")`, 2);
  }
  return port;
}

/**
 * Turns flags (and, when interactive, the answers merged into them) into settings. Every
 * mistake is a usage error naming the flag to change. Pure apart from reading `cwd`.
 */
export function resolveSetupSettings(flags: SetupFlags, context: { cwd: string; userAgent?: string }): SetupSettings {
  const projectName = flags.projectName ?? (flags.dir ? path.basename(path.resolve(context.cwd, flags.dir)).toLowerCase() : undefined);
  if (!projectName) throw new CliError('Missing --project-name (or --dir): the name of the new backend, e.g. --project-name my-backend', 2);
  if (!projectNamePattern.test(projectName)) {
    const rule = 'lowercase letters, digits, ".", "_" or "-", starting with a letter or digit';
    // A name derived from --dir must say so: the user never typed --project-name.
    if (flags.projectName === undefined) {
      throw new CliError(`--dir "${flags.dir}" gives the project name "${projectName}", which is not ${rule}: pass --project-name`, 2);
    }
    throw new CliError(`--project-name must be ${rule} (got "${projectName}")`, 2);
  }

  const backendPort = parsePort('--backend-port', flags.backendPort, 3000);
  // A Next.js frontend runs beside the backend's 3000; a frontend of your own is likely Vite's 5173.
  const frontendPort = parsePort('--frontend-port', flags.frontendPort, flags.frontend ? 3001 : 5173);
  if (backendPort === frontendPort) throw new CliError(`--backend-port and --frontend-port must differ (both are ${backendPort})`, 2);

  if (flags.db !== undefined && flags.db !== 'embedded' && flags.db !== 'postgres') {
    throw new CliError(`--db must be "embedded" or "postgres" (got "${flags.db}")`, 2);
  }
  let database: SetupSettings['database'];
  if (flags.databaseUrl !== undefined) {
    if (flags.db === 'embedded') throw new CliError('--db embedded and --database-url exclude each other; pass one', 2);
    if (!/^postgres(ql)?:\/\/.+/.test(flags.databaseUrl)) {
      throw new CliError('--database-url must look like postgresql://user:password@localhost:5432/database', 2);
    }
    database = { kind: 'postgres', url: flags.databaseUrl };
  } else if (flags.db === 'postgres') {
    throw new CliError('--db postgres needs --database-url postgresql://user:password@host:5432/database', 2);
  } else {
    database = { kind: 'embedded' };
  }

  if (flags.packageManager !== undefined && !packageManagers.includes(flags.packageManager as PackageManager)) {
    throw new CliError(`--package-manager must be one of ${packageManagers.join(', ')} (got "${flags.packageManager}")`, 2);
  }

  const dir = path.resolve(context.cwd, flags.dir ?? projectName);
  if (flags.dryRun) {
    throw new CliError("--dry-run previews connecting a frontend to an existing backend: run `authstrap setup --frontend <dir> --dry-run` in the backend's folder", 2);
  }
  return {
    projectName,
    dir,
    backendPort,
    frontendPort,
    database,
    install: flags.install !== false,
    start: flags.start !== false,
    force: flags.force === true,
    packageManager: (flags.packageManager as PackageManager | undefined) ?? detectPackageManager(context.userAgent),
    frontendDir: frontendDirOf(flags.frontend, dir, projectName, context.cwd),
  };
}

/** `--frontend web` is relative to where setup runs; a bare `--frontend` is `<project-name>-web` beside the backend. */
export function frontendDirOf(flag: string | boolean | undefined, backendDir: string, projectName: string, cwd: string): string | undefined {
  if (flag === undefined || flag === false) return undefined;
  const dir = flag === true ? path.join(path.dirname(backendDir), `${projectName}-web`) : path.resolve(cwd, flag);
  if (dir === backendDir) throw new CliError(`--frontend ${flag} is the backend's own folder: give the frontend a folder of its own`, 2);
  return dir;
}
