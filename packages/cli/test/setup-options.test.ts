import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError } from '../src/cli-error.js';
import { maskPassword, parseEnv } from '../src/project/env-file.js';
import { randomSecret, renderEnvFiles } from '../src/setup/env.js';
import { detectPackageManager, resolveSetupSettings, type SetupFlags, type SetupSettings } from '../src/setup/options.js';
import { checkNode, supportedNodeRange } from '../src/setup/steps.js';
import { chooseAuthstrapDependency, dependencyPath, isInstalledPackage, planAuthstrapDependency } from '../src/setup/authstrap-dependency.js';

const cwd = path.resolve('/work/somewhere');
const resolve = (flags: SetupFlags, userAgent?: string) => resolveSetupSettings(flags, { cwd, userAgent });

/** The CliError `run` throws; fails the test when it throws nothing or something else. */
function usageError(run: () => unknown): CliError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return error as CliError;
  }
  throw new Error('expected a usage error, but nothing was thrown');
}

describe('resolveSetupSettings', () => {
  it('fills in defaults around a project name', () => {
    expect(resolve({ projectName: 'my-backend' })).toEqual({
      projectName: 'my-backend',
      dir: path.join(cwd, 'my-backend'),
      backendPort: 3000,
      frontendPort: 5173,
      database: { kind: 'embedded' },
      install: true,
      start: true,
      force: false,
      packageManager: 'npm',
    } satisfies SetupSettings);
  });

  it('takes every flag as given', () => {
    expect(
      resolve({
        projectName: 'shop.api_2',
        dir: '../elsewhere/shop',
        backendPort: '4000',
        frontendPort: '8080',
        databaseUrl: 'postgres://app:secret@db:5432/shop',
        install: false,
        start: false,
        force: true,
        packageManager: 'yarn',
      }),
    ).toEqual({
      projectName: 'shop.api_2',
      dir: path.resolve(cwd, '../elsewhere/shop'),
      backendPort: 4000,
      frontendPort: 8080,
      database: { kind: 'postgres', url: 'postgres://app:secret@db:5432/shop' },
      install: false,
      start: false,
      force: true,
      packageManager: 'yarn',
    } satisfies SetupSettings);
  });

  it('derives the project name from --dir, lowercased, and keeps the folder as given', () => {
    const settings = resolve({ dir: 'projects/My-Backend' });
    expect(settings.projectName).toBe('my-backend');
    expect(settings.dir).toBe(path.join(cwd, 'projects/My-Backend'));
    expect(resolve({ dir: '/abs/path/api' })).toMatchObject({ projectName: 'api', dir: path.resolve('/abs/path/api') });
    // An explicit name wins over the folder's.
    expect(resolve({ dir: 'folder', projectName: 'named' })).toMatchObject({ projectName: 'named', dir: path.join(cwd, 'folder') });
  });

  it('refuses a missing name, naming --project-name and --dir', () => {
    const error = usageError(() => resolve({}));
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain('--project-name');
    expect(error.message).toContain('--dir');
    expect(usageError(() => resolve({ projectName: '' })).message).toContain('--project-name');
  });

  it.each(['My-Backend', '-leading', 'has space', 'a/b', '.hidden', 'x'.repeat(215)])('refuses the project name %j, naming --project-name', (name) => {
    const error = usageError(() => resolve({ projectName: name }));
    expect(error.exitCode).toBe(2);
    expect(error.message).toMatch(/^--project-name must be/);
    expect(error.message).toContain(name);
  });

  it('refuses a bad name derived from --dir, naming --dir and --project-name', () => {
    const error = usageError(() => resolve({ dir: 'my backend' }));
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain('--dir "my backend"');
    expect(error.message).toContain('--project-name');
  });

  it.each([
    ['--backend-port', { backendPort: '70000' }],
    ['--backend-port', { backendPort: '0' }],
    ['--backend-port', { backendPort: '3000.5' }],
    ['--backend-port', { backendPort: 'abc' }],
    ['--backend-port', { backendPort: '-1' }],
    ['--backend-port', { backendPort: '' }],
    ['--frontend-port', { frontendPort: '65536' }],
    ['--frontend-port', { frontendPort: ' 80' }],
  ] as const)('refuses a bad port, naming %s (%j)', (flag, ports) => {
    const error = usageError(() => resolve({ projectName: 'app', ...ports }));
    expect(error.exitCode).toBe(2);
    expect(error.message.startsWith(flag)).toBe(true);
    expect(error.message).toContain(`"${Object.values(ports)[0]}"`);
  });

  it('accepts the edges of the port range', () => {
    expect(resolve({ projectName: 'app', backendPort: '1', frontendPort: '65535' })).toMatchObject({ backendPort: 1, frontendPort: 65535 });
  });

  it('refuses equal backend and frontend ports, naming both flags', () => {
    const error = usageError(() => resolve({ projectName: 'app', backendPort: '5173' }));
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain('--backend-port');
    expect(error.message).toContain('--frontend-port');
  });

  describe('--db and --database-url', () => {
    const url = 'postgresql://app:secret@localhost:5432/app';

    it.each([
      [{}, { kind: 'embedded' }],
      [{ db: 'embedded' }, { kind: 'embedded' }],
      [{ databaseUrl: url }, { kind: 'postgres', url }],
      [{ db: 'postgres', databaseUrl: url }, { kind: 'postgres', url }],
      [{ databaseUrl: 'postgres://localhost/app' }, { kind: 'postgres', url: 'postgres://localhost/app' }],
    ] as const)('%j gives %j', (flags, database) => {
      expect(resolve({ projectName: 'app', ...flags }).database).toEqual(database);
    });

    it.each([
      ['--db', { db: 'mysql' }, '"mysql"'],
      ['--db', { db: 'Embedded' }, '"Embedded"'],
      ['--db embedded and --database-url', { db: 'embedded', databaseUrl: url }, 'exclude each other'],
      ['--db postgres needs --database-url', { db: 'postgres' }, 'postgresql://'],
      ['--database-url', { databaseUrl: 'mysql://app@localhost/app' }, 'postgresql://'],
      ['--database-url', { databaseUrl: 'postgres://' }, 'postgresql://'],
      ['--database-url', { databaseUrl: '' }, 'postgresql://'],
    ] as const)('refuses, naming %s: %j', (flag, flags, detail) => {
      const error = usageError(() => resolve({ projectName: 'app', ...flags }));
      expect(error.exitCode).toBe(2);
      expect(error.message.startsWith(flag)).toBe(true);
      expect(error.message).toContain(detail);
    });
  });

  describe('the package manager', () => {
    it.each(['npm', 'pnpm', 'yarn', 'bun'])('takes --package-manager %s', (manager) => {
      expect(resolve({ projectName: 'app', packageManager: manager }, 'pnpm/10.0.0 npm/? node/v20.19.0').packageManager).toBe(manager);
    });

    it.each(['deno', 'NPM', '', 'npm '])('refuses --package-manager %j, naming the flag and the choices', (manager) => {
      const error = usageError(() => resolve({ projectName: 'app', packageManager: manager }));
      expect(error.exitCode).toBe(2);
      expect(error.message).toMatch(/^--package-manager must be one of npm, pnpm, yarn, bun/);
      expect(error.message).toContain(`"${manager}"`);
    });

    it('without the flag, uses the one that runs the CLI', () => {
      expect(resolve({ projectName: 'app' }, 'pnpm/10.1.0 npm/? node/v20.19.0 linux x64').packageManager).toBe('pnpm');
      expect(resolve({ projectName: 'app' }, 'bun/1.2.0 npm/? node/v22.6.0 linux x64').packageManager).toBe('bun');
      expect(resolve({ projectName: 'app' }).packageManager).toBe('npm');
    });
  });
});

describe('detectPackageManager', () => {
  it.each([
    ['npm/10.8.2 node/v20.19.0 linux x64 workspaces/false', 'npm'],
    ['pnpm/10.1.0 npm/? node/v20.19.0 linux x64', 'pnpm'],
    ['yarn/1.22.22 npm/? node/v20.19.0 linux x64', 'yarn'],
    ['yarn/4.5.0 npm/? node/v22.11.0 darwin arm64', 'yarn'],
    ['bun/1.2.0 npm/? node/v22.6.0 linux x64', 'bun'],
    ['deno/2.1.0 npm/? deno/2.1.0 linux x86_64', 'npm'],
    ['', 'npm'],
    [undefined, 'npm'],
  ])('%j -> %s', (userAgent, manager) => {
    expect(detectPackageManager(userAgent)).toBe(manager);
  });
});

describe('renderEnvFiles', () => {
  const base = resolve({ projectName: 'app', backendPort: '4100', frontendPort: '4200' });
  const secrets = { authSecret: 'A'.repeat(16) + 'b-_9'.repeat(4), serviceApiKey: 'service-key-0123456789abcdef0123456789' };

  it('writes the secrets exactly as given, the ports and the origin', () => {
    const { env } = renderEnvFiles(base, secrets);
    const values = parseEnv(env);
    expect(values.AUTH_SECRET).toBe(secrets.authSecret);
    expect(env).toContain(`\nAUTH_SECRET=${secrets.authSecret}\n`);
    expect(values.SERVICE_API_KEY).toBe(secrets.serviceApiKey);
    expect(values.PORT).toBe('4100');
    expect(values.AUTH_URL).toBe('http://localhost:4100');
    expect(values.ALLOWED_ORIGINS).toBe('http://localhost:4200');
    expect(values.NODE_ENV).toBe('development');
  });

  it('embedded: no DATABASE_URL in either file, only a commented hint', () => {
    const { env, example } = renderEnvFiles(base, secrets);
    for (const file of [env, example]) {
      expect(parseEnv(file)).not.toHaveProperty('DATABASE_URL');
      expect(file).toContain('# DATABASE_URL=');
      expect(file).toContain('.data/pglite');
    }
  });

  it('postgres: DATABASE_URL in .env; .env.example only a placeholder without the real credentials', () => {
    const url = 'postgresql://app:s3cr3t-pw@db.internal:5432/app';
    const { env, example } = renderEnvFiles(resolve({ projectName: 'app', databaseUrl: url }), secrets);
    expect(parseEnv(env).DATABASE_URL).toBe(url);
    expect(env).toContain(`\nDATABASE_URL=${url}\n`);
    expect(parseEnv(example)).not.toHaveProperty('DATABASE_URL');
    expect(example).toContain('# DATABASE_URL=postgresql://');
    expect(example).not.toContain('s3cr3t-pw');
    expect(example).not.toContain('db.internal');
  });

  it('.env.example has the same keys and no secret', () => {
    const { env, example } = renderEnvFiles(base, secrets);
    const values = parseEnv(example);
    expect(Object.keys(values)).toEqual(Object.keys(parseEnv(env)));
    expect(values.AUTH_SECRET).toBe('');
    expect(values.SERVICE_API_KEY).toBe('');
    expect(example).not.toContain(secrets.authSecret);
    expect(example).not.toContain(secrets.serviceApiKey);
    // Everything else is the same as in .env.
    expect(values.PORT).toBe('4100');
    expect(values.ALLOWED_ORIGINS).toBe('http://localhost:4200');
  });
});

describe('randomSecret', () => {
  it('gives 32 URL-safe characters, different each time', () => {
    const secrets = Array.from({ length: 50 }, () => randomSecret(32));
    for (const secret of secrets) expect(secret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(new Set(secrets).size).toBe(secrets.length);
  });

  it.each([1, 31, 33, 43, 64])('gives exactly %i characters when asked', (length) => {
    expect(randomSecret(length)).toMatch(new RegExp(`^[A-Za-z0-9_-]{${length}}$`));
  });
});

describe('maskPassword', () => {
  it.each([
    ['postgresql://app:secret@db:5432/app', 'postgresql://app:***@db:5432/app'],
    ['postgres://postgres:pw@127.0.0.1/postgres?sslmode=require', 'postgres://postgres:***@127.0.0.1/postgres?sslmode=require'],
    ['postgresql://app:p@ss@db:5432/app', 'postgresql://app:***@db:5432/app'],
    ['postgresql://app:p%40ss@db/app', 'postgresql://app:***@db/app'],
    ['redis://default:secret@cache:6379', 'redis://default:***@cache:6379'],
    ['redis://:secret@cache:6379/0', 'redis://:***@cache:6379/0'],
    ['rediss://:secret@cache', 'rediss://:***@cache'],
  ])('%s -> %s', (url, masked) => {
    expect(maskPassword(url)).toBe(masked);
  });

  it.each([
    'postgresql://app@db:5432/app',
    'postgres://db:5432/app',
    'postgres://localhost/app',
    'redis://cache:6379',
    'redis://cache:6379/0',
  ])('leaves %s (no password) unchanged', (url) => {
    expect(maskPassword(url)).toBe(url);
  });
});

describe('checkNode', () => {
  it.each(['20.19.0', '20.19.5', '22.12.0', '22.23.5', '24.0.0', '24.22.3', '25.1.0'])('accepts Node %s', (version) => {
    expect(checkNode(version)).toBe(`Node ${version}`);
  });

  it.each(['20.18.3', '20.0.0', '21.7.3', '22.11.0', '22.0.0', '18.20.4', '16.20.2', '8.0.0'])('rejects Node %s, naming that version and the minimums', (version) => {
    const error = usageError(() => checkNode(version));
    expect(error.exitCode).toBe(1);
    expect(error.message).toContain(`(this is ${version})`);
    expect(error.message).toContain('20.19+ or 22.12+');
  });

  it('is the range every package authstrap ships or writes declares in engines', () => {
    const root = path.resolve(import.meta.dirname, '../../..');
    const manifests = ['package.json', 'packages/cli/package.json', 'packages/better-auth-adapter/package.json', 'examples/saas-backend/package.json', 'templates/backend/project/package.json.hbs', 'templates/frontend/app/package.json.hbs'];
    for (const manifest of manifests) {
      // The templates are Handlebars, not JSON yet: read the one field by its text.
      const engines = /"engines": \{\s*"node": "([^"]*)"\s*\}/.exec(fs.readFileSync(path.join(root, manifest), 'utf8'));
      expect(engines?.[1], manifest).toBe(supportedNodeRange);
    }
  });

  it('checks the running Node by default', () => {
    expect(checkNode()).toBe(`Node ${process.versions.node}`);
  });
});

describe('how a new project asks for authstrap', () => {
  const packageDir = path.resolve('/home/me/.npm/_npx/1a2b/node_modules/authstrap');

  it('pins the version the registry has, and links the CLI when the registry does not have it', () => {
    expect(chooseAuthstrapDependency({ version: '0.1.0', packageDir, published: true })).toBe('0.1.0');
    expect(chooseAuthstrapDependency({ version: '0.1.0', packageDir, published: false })).toBe(`file:${packageDir}`);
  });

  it('keeps the version when the registry could not be asked: the install then says why', () => {
    expect(chooseAuthstrapDependency({ version: '0.1.0', packageDir, published: undefined })).toBe('0.1.0');
  });

  it('tells an installed package from a checkout by its node_modules folder', () => {
    expect(isInstalledPackage(packageDir)).toBe(true);
    expect(isInstalledPackage(path.resolve('/work/authstrap/packages/cli'))).toBe(false);
    expect(isInstalledPackage(path.resolve('/work/my_node_modules_notes/cli'))).toBe(false);
  });
});

describe('an upgrade and the project\'s own authstrap dependency', () => {
  const projectDir = path.resolve('/work/billing');
  // The running CLI, from npx's cache: setup links it while its version is not on the registry.
  const packageDir = path.resolve('/home/me/.npm/_npx/1a2b/node_modules/authstrap');
  const packageJson = (spec: string) => `{\n  "name": "billing",\n  "devDependencies": {\n    "authstrap": ${JSON.stringify(spec)},\n    "tsx": "^4.20.6"\n  }\n}\n`;
  const plan = (spec: string, published: boolean | undefined) => planAuthstrapDependency(packageJson(spec), projectDir, { version: '0.2.0', packageDir, published });

  it('reads the path of file:, link: and bare path specs, and none from a range, a tag or a git spec', () => {
    expect(dependencyPath('file:../authstrap-0.2.0.tgz', projectDir)).toBe(path.resolve('/work/authstrap-0.2.0.tgz'));
    expect(dependencyPath('link:/opt/authstrap', projectDir)).toBe(path.resolve('/opt/authstrap'));
    expect(dependencyPath('./vendor/authstrap-0.2.0.tgz', projectDir)).toBe(path.resolve('/work/billing/vendor/authstrap-0.2.0.tgz'));
    for (const spec of ['0.2.0', '^0.2.0', 'latest', 'github:me/authstrap', 'https://example.com/authstrap.tgz']) expect(dependencyPath(spec, projectDir)).toBeUndefined();
  });

  it('replaces a tarball outside the project, as `npm install <tarball>` left it, by the version once the registry has it', () => {
    const upgraded = plan('file:../../tmp/authstrap-0.2.0.tgz', true);
    expect(upgraded.packageJson).toBe(packageJson('0.2.0'));
    expect(upgraded.copy).toBeUndefined();
    expect(upgraded.note).toContain('outside the project');
    expect(plan('file:/tmp/authstrap-0.2.0.tgz', true).packageJson).toBe(packageJson('0.2.0'));
  });

  it('keeps the tarball inside the project, and points package.json at it, while the registry does not have the version or cannot be asked', () => {
    for (const published of [false, undefined]) {
      const kept = plan('file:../../tmp/authstrap-0.2.0.tgz', published);
      expect(kept.packageJson).toBe(packageJson('file:vendor/authstrap-0.2.0.tgz'));
      expect(kept.copy).toEqual({ from: path.resolve('/tmp/authstrap-0.2.0.tgz'), to: 'vendor/authstrap-0.2.0.tgz' });
      expect(kept.note).toContain('`npm install -D authstrap@0.2.0`');
    }
  });

  it('says what to run, and changes nothing, for a folder outside the project that the registry cannot replace yet', () => {
    const folder = plan('file:../authstrap/packages/cli', false);
    expect(folder.packageJson).toBeUndefined();
    expect(folder.copy).toBeUndefined();
    expect(folder.note).toContain('`npm install -D authstrap@0.2.0` mends it');
  });

  it('leaves a version range, a path inside the project and setup\'s link to this very CLI alone', () => {
    for (const spec of ['0.2.0', '^0.1.0', 'file:vendor/authstrap-0.2.0.tgz', `file:${packageDir}`]) expect(plan(spec, true)).toEqual({});
    expect(planAuthstrapDependency('not json', projectDir, { version: '0.2.0', packageDir, published: true })).toEqual({});
  });
});
