import fs from 'node:fs';
import path from 'node:path';
import { CliError } from '../cli-error.js';
import type { ProbeContext } from '../checks/probe-context.js';
import { embeddedDatabaseHolder, projectDatabase, serverAnswers } from '../project/database.js';
import { backendSetting, readProjectEnv } from '../project/env-file.js';
import { schemaFileName } from '../schema/index.js';
import { printJson } from '../ui/output.js';
import { formatCheck, summarizeChecks } from '../ui/report.js';
import type { DatabaseTarget } from '../verify/database.js';
import { runVerify, type VerifyReport } from '../verify/index.js';

export interface VerifyCommandOptions {
  url?: string;
  databaseUrl?: string;
  serviceKey?: string;
  dir?: string;
  /** A frontend running Better Auth on the adapter, to check with the backend. */
  frontend?: string;
  json?: boolean;
}

/**
 * `authstrap verify`: probes a running backend and its database, examines the project in its
 * folder as `fix` does, and prints a checklist. Settings come in the order the backend takes
 * them: flags, then the process environment, then the project's .env (the current folder, or --dir).
 */
export async function verifyCommand(options: VerifyCommandOptions): Promise<VerifyReport> {
  const projectDir = path.resolve(options.dir ?? '.');
  // Outside a project there is nothing that says where the backend is: probing localhost:3000
  // anyway would check whatever happens to listen there.
  const isProject = ['.env', schemaFileName].some((file) => fs.existsSync(path.join(projectDir, file)));
  if (options.url === undefined && !isProject) {
    const shown = path.relative(process.cwd(), projectDir) || '.';
    const where = fs.existsSync(projectDir) ? `${shown} is not an authstrap project (no .env, no authstrap.schema.ts)` : `--dir ${shown} does not exist`;
    throw new CliError(`${where}: run verify in the project's folder, or pass --dir <project folder> or --url <backend URL>`, 2);
  }
  const dotEnv = readProjectEnv(projectDir);
  const setting = (name: string) => backendSetting(name, dotEnv);
  const url = options.url ?? setting('AUTH_URL')?.value ?? `http://localhost:${setting('PORT')?.value ?? 3000}`;
  if (!/^https?:\/\/[^/]+/.test(url)) throw new CliError(`--url must be an http(s) URL like http://localhost:3000 (got "${url}")`, 2);

  if (options.frontend !== undefined && !/^https?:\/\/[^/]+/.test(options.frontend)) {
    throw new CliError(`--frontend must be the frontend's http(s) URL, like http://localhost:3001 (got "${options.frontend}")`, 2);
  }

  const databaseUrl = options.databaseUrl ?? setting('DATABASE_URL')?.value;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\/.+/.test(databaseUrl)) {
    throw new CliError(`--database-url must look like postgresql://user:password@host:5432/database`, 2);
  }
  const hasSchema = fs.existsSync(path.join(projectDir, schemaFileName));
  let database: DatabaseTarget | undefined;
  let noDatabaseReason: string | undefined;
  if (databaseUrl) database = { kind: 'postgres', url: databaseUrl };
  else if (hasSchema) {
    // An embedded database belongs to the one process that has it open.
    noDatabaseReason = 'the embedded database is held by the running backend; stop it to check its tables, or use PostgreSQL';
    if (!(await serverAnswers(url))) {
      const target = projectDatabase(projectDir, { EMBEDDED_DB_DIR: setting('EMBEDDED_DB_DIR')?.value ?? '' });
      const unavailable = target.kind === 'embedded' ? embeddedUnavailable(projectDir, target.dir, url) : undefined;
      if (unavailable) noDatabaseReason = unavailable;
      else database = target;
    }
  } else {
    noDatabaseReason = 'no database given: pass --database-url';
  }

  const report = await runVerify({
    url,
    projectDir: hasSchema ? projectDir : undefined,
    database,
    noDatabaseReason,
    serviceKey: serviceKeyOf(options.serviceKey, setting('SERVICE_API_KEY')),
    nodeEnv: setting('NODE_ENV')?.value,
    frontendUrl: options.frontend,
  });
  if (options.json) printJson(report);
  else {
    for (const result of report.checks) console.log(formatCheck(result));
    console.log(`\n${summarizeChecks(report.checks)} — ${url}`);
    if (report.leftBehind) console.log(`Note: ${report.leftBehind}`);
  }
  return report;
}

function serviceKeyOf(flag: string | undefined, setting: ReturnType<typeof backendSetting>): ProbeContext['serviceKey'] {
  if (flag !== undefined) return { value: flag, source: '--service-key' };
  if (!setting) return undefined;
  return { value: setting.value, source: setting.source === 'environment' ? 'SERVICE_API_KEY in the environment' : 'SERVICE_API_KEY in .env' };
}

/** Why verify must not open the embedded folder: it is not there yet, or another backend holds it. */
function embeddedUnavailable(projectDir: string, dir: string, url: string): string | undefined {
  const folder = path.relative(projectDir, dir) || dir;
  // Opening a folder that is not there would create an empty database (or fail on its parent).
  if (!fs.existsSync(dir)) return `the embedded database in ${folder} does not exist yet: start the backend once (npm run dev) to create it`;
  const holder = embeddedDatabaseHolder(dir);
  if (holder) return `the embedded database in ${folder} is held by process ${holder.pid} (a backend not on ${url}); stop it to check its tables`;
  return undefined;
}
