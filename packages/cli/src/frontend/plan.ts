import { CliError } from '../cli-error.js';
import type { FileChange } from '../checks/check.js';
import { byCodeUnit, outputPath, renderIfTemplate, sortedEntries } from '../generate/render.js';
import type { Schema } from '../schema/types.js';
import type { FrontendTemplates } from './templates.js';
import { frontendEntityView, pageEntity } from './view.js';

/**
 * `authstrap setup --frontend`, planned without touching disk: the files of a new Next.js app, or
 * the few files that connect an existing one to the backend. Each plan is a list of whole-file
 * changes (`before` is '' for a new file); the command prints them (`--dry-run`) or writes them.
 */

/** What the frontend needs from the backend, read from the backend's `.env` and package.json. */
export interface BackendLink {
  /** The backend's address, e.g. http://localhost:3000 (its AUTH_URL). */
  url: string;
  authSecret: string;
  serviceApiKey: string;
  /** The backend folder as seen from the frontend, for the README: `../api`. */
  relativeDir: string;
}

export interface FrontendOptions {
  packageName: string;
  /** The entities the API keys page offers permissions on (permissionEntities of the schema). */
  permissionEntities: { name: string; label: string }[];
  port: number;
  backend: BackendLink;
  /** How package.json asks for the adapter package (a version, or `file:` a packed copy). */
  adapterDependency: string;
}

/**
 * The packages the app imports, at versions that support Node 20.19, 22 and 24 and React 19 (the component
 * foundation, Tailwind CSS and Radix's alert dialog, is chosen in docs/frontend.md).
 */
export const frontendDependencies = {
  '@radix-ui/react-alert-dialog': '^1.2.1',
  'better-auth': '^1.7.25',
  next: '^16.4.6',
  react: '^19.3.1',
  'react-dom': '^19.3.1',
};

export const frontendDevDependencies = {
  '@tailwindcss/postcss': '^4.3.5',
  // The lowest supported Node's API, as the backend's (docs/decisions.md).
  '@types/node': '^20.19.0',
  '@types/react': '^19.3.0',
  '@types/react-dom': '^19.3.0',
  tailwindcss: '^4.3.5',
  typescript: '~5.9.3',
};

/** What the console's pages import beyond Next.js and React: an existing app gains these too. */
const consoleDependencies = { '@radix-ui/react-alert-dialog': frontendDependencies['@radix-ui/react-alert-dialog'] };

/**
 * The team console in the app template (the organization's settings pages, their components and
 * the organization context they read; the user's security page): what `setup --frontend` adds to an existing app too.
 */
export function isConsoleTemplate(templatePath: string): boolean {
  return (
    templatePath.startsWith('src/app/settings/') ||
    templatePath.startsWith('src/components/settings/') ||
    templatePath.startsWith('src/components/ui/') ||
    templatePath === 'src/components/organization-provider.tsx' ||
    // The user's own security page: their sessions and security events.
    templatePath.startsWith('src/app/account/security/') ||
    templatePath === 'src/components/account-security.tsx'
  );
}

/** The schema's entities a machine key may be given permissions on (the API keys page), as the page names them. */
export function permissionEntities(schema: Schema): { name: string; label: string }[] {
  return schema.entities
    .filter((entity) => !entity.builtin && !entity.serviceOnly && entity.tenantScoped)
    .map((entity) => ({ name: entity.name, label: frontendEntityView(entity).label }));
}

export const adapterPackageName = '@authstrap/better-auth-adapter';

/** Where the typed client goes, relative to the source root (`src/` or the app's root). */
export const clientFile = 'lib/authstrap-client.ts';

/** The frontend's own origin, e.g. http://localhost:3001: what the backend's CORS must allow. */
export const frontendOrigin = (port: number) => `http://localhost:${port}`;

/** `.env.local`: the backend's address and the two secrets the frontend's server shares with it. */
export function frontendEnvEntries(options: Pick<FrontendOptions, 'port' | 'backend'>): [string, string][] {
  return [
    ['BETTER_AUTH_URL', frontendOrigin(options.port)],
    ['AUTH_SECRET', options.backend.authSecret],
    ['AUTHSTRAP_URL', options.backend.url],
    ['SERVICE_API_KEY', options.backend.serviceApiKey],
    ['NEXT_PUBLIC_AUTHSTRAP_URL', options.backend.url],
    // `next start` runs as production, which otherwise keeps unconfirmed addresses out; a local
    // setup lets them in, as the backend's development .env does. Deployments leave it out.
    ['REQUIRE_EMAIL_VERIFICATION', 'false'],
  ];
}

const envComments: Record<string, string> = {
  BETTER_AUTH_URL: "# This app's own address.",
  AUTH_SECRET: "# The backend's AUTH_SECRET: Better Auth signs the session cookie the backend checks.",
  AUTHSTRAP_URL: '# The backend, for this server (the adapter keeps users and sessions there).',
  SERVICE_API_KEY: "# The backend's SERVICE_API_KEY: a secret of this server, never sent to a browser.",
  NEXT_PUBLIC_AUTHSTRAP_URL: '# The backend, for the browser (the typed client in lib/api.ts).',
  REQUIRE_EMAIL_VERIFICATION: '# Unconfirmed addresses may sign in here; production without this line keeps them out until they confirm.',
};

/** Values that must be the backend's own while the app talks to that backend: a stale one breaks every sign-in. */
const sharedSecrets = ['AUTH_SECRET', 'SERVICE_API_KEY'];

/**
 * The `.env.local` after adding the keys it lacks. Keys already there keep their values (the
 * user may have pointed them elsewhere), except the shared secrets of an app still pointed at
 * this backend (`AUTHSTRAP_URL`), which follow the backend's (setup --force makes new ones). A
 * file with every key right comes back unchanged.
 */
export function mergeEnvLocal(before: string, entries: [string, string][], backendDir: string): string {
  const wanted = new Map(entries);
  const present = new Map(
    before
      .split('\n')
      .map((line) => /^\s*([A-Z0-9_]+)\s*=(.*)$/.exec(line))
      .filter((match) => match !== null)
      .map((match) => [match[1]!, match[2]!.trim()] as const),
  );
  const ours = !present.has('AUTHSTRAP_URL') || present.get('AUTHSTRAP_URL') === wanted.get('AUTHSTRAP_URL');
  let text = before;
  for (const key of sharedSecrets) {
    const value = wanted.get(key);
    if (ours && value !== undefined && present.has(key) && present.get(key) !== value) {
      text = text.replace(new RegExp(`^(\\s*${key}\\s*=).*$`, 'm'), (_line, assignment: string) => `${assignment}${value}`);
    }
  }
  const missing = entries.filter(([key]) => !present.has(key));
  if (missing.length === 0) return text;
  const lines = [`# Added by authstrap setup --frontend from ${backendDir}/.env. Secrets: keep this file out of git.`];
  for (const [key, value] of missing) lines.push(envComments[key] ?? '', `${key}=${value}`);
  const separator = text === '' ? '' : text.endsWith('\n') ? '\n' : '\n\n';
  return `${text}${separator}${lines.filter(Boolean).join('\n')}\n`;
}

/** A package.json with the packages the auth files and the console need added; what is there already stays. */
export function withAuthDependencies(packageJsonText: string, adapterDependency: string): string {
  const packageJson = JSON.parse(packageJsonText) as Record<string, Record<string, string> | undefined>;
  const has = (name: string) => Boolean(packageJson.dependencies?.[name] ?? packageJson.devDependencies?.[name]);
  const wanted: Record<string, string> = { ...consoleDependencies, 'better-auth': frontendDependencies['better-auth'], [adapterPackageName]: adapterDependency };
  const missing = Object.entries(wanted).filter(([name]) => !has(name));
  if (missing.length === 0) return packageJsonText;
  const dependencies = { ...packageJson.dependencies, ...Object.fromEntries(missing) };
  packageJson.dependencies = Object.fromEntries(Object.entries(dependencies).sort(([a], [b]) => byCodeUnit(a, b)));
  const indent = /^\{\n([ \t]+)"/.exec(packageJsonText)?.[1] ?? '  ';
  return `${JSON.stringify(packageJson, null, indent)}\n`;
}

/** Template path -> app path: `_gitignore` -> `.gitignore`, `_entity` -> the entity's route, no `.hbs`. */
function appPath(templatePath: string, entity: { route: string; fileBase: string }): string {
  return outputPath(templatePath).replace('/_entity/', `/${entity.route}/`).replace('/_entity-panel.', `/${entity.fileBase}-panel.`);
}

/**
 * Every file of a new app in an empty folder: the app itself (pages, organization switcher, the
 * data page of the schema's first business entity), the auth files, `.env.local`. The typed
 * client is not among them: `authstrap generate` writes it (see the backend's `authstrap.clients`).
 */
export function planNewFrontend(schema: Schema, templates: FrontendTemplates, options: FrontendOptions): FileChange[] {
  const entity = pageEntity(schema);
  if (!entity) {
    throw new CliError('The schema has no tenant-scoped entity of its own for the frontend data page: add one to authstrap.schema.ts, run `authstrap generate`, then setup --frontend again', 1);
  }
  const view = frontendEntityView(entity, schema.auth);
  const data = {
    appTitle: options.packageName,
    packageName: options.packageName,
    frontendPort: options.port,
    backendRelative: options.backend.relativeDir,
    entity: view,
    permissionEntities: options.permissionEntities,
    dependencies: sortedEntries({ ...frontendDependencies, [adapterPackageName]: options.adapterDependency }),
    devDependencies: sortedEntries(frontendDevDependencies),
  };
  const files: FileChange[] = [];
  for (const [templatePath, source] of templates.app) {
    files.push({ path: appPath(templatePath, view), before: '', after: renderIfTemplate(templatePath, source, data) });
  }
  for (const [templatePath, source] of templates.auth) files.push({ path: `src/${templatePath}`, before: '', after: source });
  files.push({ path: '.env.local', before: '', after: mergeEnvLocal('', frontendEnvEntries(options), options.backend.relativeDir) });
  return files.sort((a, b) => byCodeUnit(a.path, b.path));
}

/** An existing Next.js app, as read from disk (see existing-app.ts). */
export interface ExistingApp {
  /** `src` when the App Router lives in src/app, '' when in app/. */
  sourceRoot: string;
  packageJsonText: string;
  /** The current text of every file the plan may write ('' when missing). */
  files: Record<string, string>;
}

/** The files the plan writes into an existing app, relative to it, for `readExistingApp` to read. */
export function existingAppPaths(templates: FrontendTemplates, sourceRoot: string): string[] {
  const inSource = (file: string) => (sourceRoot ? `${sourceRoot}/${file}` : file);
  return [...[...templates.auth.keys()].map(inSource), ...[...consoleFiles(templates, { permissionEntities: [] }).keys()].map(inSource), '.env.local', 'package.json'];
}

/** The console's files as an existing app gets them, by path under its source root (`app/settings/members/page.tsx`). */
function consoleFiles(templates: FrontendTemplates, data: Pick<FrontendOptions, 'permissionEntities'>): Map<string, string> {
  const files = new Map<string, string>();
  for (const [templatePath, source] of templates.app) {
    if (isConsoleTemplate(templatePath)) files.set(outputPath(templatePath).replace(/^src\//, ''), renderIfTemplate(templatePath, source, data));
  }
  return files;
}

/**
 * Connects an existing Next.js app to the backend and adds the team console, and changes nothing
 * else: the auth files and the console's pages (app/settings) and components (each only when
 * missing: a file of that name that differs is the user's, and is reported, not replaced),
 * `.env.local` (missing keys added) and package.json (Better Auth, the adapter and the console's
 * dialog added). Run twice, the second plan is empty.
 */
export function planExistingFrontend(app: ExistingApp, templates: FrontendTemplates, options: FrontendOptions): { changes: FileChange[]; kept: string[] } {
  const changes: FileChange[] = [];
  const kept: string[] = [];
  const inSource = (file: string) => (app.sourceRoot ? `${app.sourceRoot}/${file}` : file);
  for (const [templatePath, source] of [...templates.auth, ...consoleFiles(templates, options)]) {
    const target = inSource(templatePath);
    const before = app.files[target] ?? '';
    if (before === '') changes.push({ path: target, before, after: source });
    else if (before !== source) kept.push(target);
  }
  const env = app.files['.env.local'] ?? '';
  const envAfter = mergeEnvLocal(env, frontendEnvEntries(options), options.backend.relativeDir);
  if (envAfter !== env) changes.push({ path: '.env.local', before: env, after: envAfter });
  const packageAfter = withAuthDependencies(app.packageJsonText, options.adapterDependency);
  if (packageAfter !== app.packageJsonText) changes.push({ path: 'package.json', before: app.packageJsonText, after: packageAfter });
  return { changes, kept };
}
