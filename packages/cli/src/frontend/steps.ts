import fs from 'node:fs';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { CliError } from '../cli-error.js';
import type { FileChange } from '../checks/check.js';
import { applyWrites, loadTemplates, packageNameFor, planGenerate } from '../generate/index.js';
import { allowedOrigins, allowsOrigin } from '../project/allowed-origins.js';
import { parseEnv, withEnvValue } from '../project/env-file.js';
import { loadSchemaWithSource } from '../schema/index.js';
import { adapterDependency } from './adapter-dependency.js';
import { inspectFrontendFolder } from './existing-app.js';
import { clientFile, frontendOrigin, permissionEntities, planExistingFrontend, planNewFrontend, type BackendLink } from './plan.js';
import { loadFrontendTemplates } from './templates.js';

/**
 * `setup --frontend`'s effects: read the backend and the frontend folder, plan, then print or
 * write. The planning itself is plan.ts.
 */

export interface FrontendSetupPlan {
  kind: 'new' | 'next';
  frontendDir: string;
  port: number;
  /** Every file to write, with absolute paths: the frontend's and the backend's (.env, package.json). */
  changes: FileChange[];
  /** The typed client the backend's `authstrap generate` writes into the frontend. */
  clientPath: string;
  /** Files of the same name the user already has and that stay as they are. */
  kept: string[];
  notes: string[];
}

const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');

/** The backend's address and secrets, from its .env (written by setup, or the user's own). */
function backendLink(backendDir: string, frontendDir: string, env: Record<string, string>): BackendLink {
  const missing = ['AUTH_SECRET', 'SERVICE_API_KEY'].filter((key) => !env[key]);
  if (missing.length > 0) {
    throw new CliError(`${path.join(backendDir, '.env')} has no ${missing.join(' or ')}: the frontend's server needs both (run \`authstrap fix\` in the backend, or set them)`, 1);
  }
  return {
    url: env.AUTH_URL || `http://localhost:${env.PORT || 3000}`,
    authSecret: env.AUTH_SECRET!,
    serviceApiKey: env.SERVICE_API_KEY!,
    relativeDir: path.relative(frontendDir, backendDir).split(path.sep).join('/') || '.',
  };
}

/** ALLOWED_ORIGINS with the frontend's origin, and package.json naming the client's copy. */
function backendChanges(backendDir: string, origin: string, clientPath: string): FileChange[] {
  const changes: FileChange[] = [];
  const envFile = path.join(backendDir, '.env');
  const env = read(envFile);
  const allowed = allowedOrigins(parseEnv(env));
  if (!allowsOrigin(allowed, origin)) {
    const origins = [...allowed.map((item) => item.entry), origin].join(',');
    const after = withEnvValue(env, 'ALLOWED_ORIGINS', origins);
    if (after === undefined) throw new CliError(`${envFile}: set ALLOWED_ORIGINS=${origins} by hand (no one-line edit of it gives the backend that value)`, 1);
    changes.push({ path: envFile, before: env, after });
  }
  const packageFile = path.join(backendDir, 'package.json');
  const packageText = read(packageFile);
  const packageJson = JSON.parse(packageText);
  const relative = path.relative(backendDir, clientPath).split(path.sep).join('/');
  const clients: string[] = packageJson.authstrap?.clients ?? [];
  if (!clients.includes(relative)) {
    packageJson.authstrap = { ...packageJson.authstrap, clients: [...clients, relative] };
    changes.push({ path: packageFile, before: packageText, after: `${JSON.stringify(packageJson, null, 2)}\n` });
  }
  return changes;
}

export async function planFrontendSetup(options: { backendDir: string; frontendDir: string; port: number; packageName?: string }): Promise<FrontendSetupPlan> {
  const { backendDir, frontendDir, port } = options;
  const templates = loadFrontendTemplates();
  const folder = inspectFrontendFolder(frontendDir, templates);
  const { schema } = loadSchemaWithSource(backendDir);
  const backend = backendLink(backendDir, frontendDir, parseEnv(read(path.join(backendDir, '.env'))));
  const adapter = await adapterDependency();
  const common = { packageName: options.packageName ?? packageNameFor(frontendDir), port, backend, adapterDependency: adapter.spec, permissionEntities: permissionEntities(schema) };

  const inFrontend = (changes: FileChange[]) => changes.map((change) => ({ ...change, path: path.join(frontendDir, change.path) }));
  let changes: FileChange[];
  let kept: string[] = [];
  let sourceRoot = 'src';
  if (folder.kind === 'new') {
    changes = inFrontend(planNewFrontend(schema, templates, common));
  } else {
    sourceRoot = folder.app.sourceRoot;
    const planned = planExistingFrontend(folder.app, templates, common);
    changes = inFrontend(planned.changes);
    kept = planned.kept.map((file) => path.join(frontendDir, file));
  }
  const clientPath = path.join(frontendDir, sourceRoot, clientFile);
  changes.push(...backendChanges(backendDir, frontendOrigin(port), clientPath));
  return { kind: folder.kind, frontendDir, port, changes, clientPath, kept, notes: [adapter.note] };
}

/** The plan as a person reads it: a unified diff per file. */
export function describeFrontendPlan(plan: FrontendSetupPlan, cwd = process.cwd()): string {
  const shown = (file: string) => path.relative(cwd, file) || '.';
  const parts = plan.changes.map((change) =>
    createTwoFilesPatch(change.before ? `a/${shown(change.path)}` : '/dev/null', `b/${shown(change.path)}`, change.before, change.after, '', '', { context: 2 }).trimEnd(),
  );
  if (!fs.existsSync(plan.clientPath)) parts.push(`+ ${shown(plan.clientPath)} (the typed client, written by \`authstrap generate\` from the backend's schema)`);
  for (const file of plan.kept) parts.push(`= ${shown(file)} exists and differs from authstrap's: left as it is (compare it with the docs' version)`);
  return parts.join('\n\n');
}

/**
 * Writes the plan, then lets the backend's generate write the typed client into the frontend
 * (package.json now names it). Returns the files written, relative to `cwd`.
 */
export function applyFrontendSetup(plan: FrontendSetupPlan, backendDir: string): string[] {
  for (const change of plan.changes) {
    if (read(change.path) !== change.before) throw new CliError(`${change.path} changed while setup was running; nothing more was written, run it again`, 1);
  }
  for (const change of plan.changes) {
    fs.mkdirSync(path.dirname(change.path), { recursive: true });
    fs.writeFileSync(change.path, change.after);
  }
  const { schema } = loadSchemaWithSource(backendDir);
  const generated = planGenerate(backendDir, schema, loadTemplates());
  if (generated.problems.length > 0) throw new CliError(`Cannot write the typed client:\n${generated.problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  // Only the client copies: anything else generate would change is the backend's own business.
  const client = generated.writes.filter((write) => path.resolve(backendDir, write.path) === plan.clientPath);
  applyWrites(backendDir, client);
  return [...plan.changes.map((change) => change.path), ...client.map((write) => path.resolve(backendDir, write.path))];
}
