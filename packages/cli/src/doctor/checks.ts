import path from 'node:path';
import { defaultOrganization } from '../generate/migration.js';
import { databaseModel, literal, quote, type Table } from '../generate/table-model.js';
import { allowedOrigins, withEnvValue } from '../project/env-file.js';
import { schemaFileName } from '../schema/index.js';
import { loopbackHostsCheck } from './checks/loopback-hosts.js';
import type { LiveColumn, ProjectState } from './project-state.js';

/**
 * The checks of `authstrap fix`: each looks at the project snapshot and says pass, warn or
 * fail, and for a failure it can repair, the repair: whole-file writes and SQL. Nothing here
 * touches disk or database; `apply.ts` does, after `--dry-run` has had its say.
 */

export type FindingStatus = 'pass' | 'warn' | 'fail';

export interface FileChange {
  path: string;
  before: string;
  after: string;
}

export interface Repair {
  /** What the repair does, in a few words: "set providerId = 'credential' on 2 accounts". */
  summary: string;
  files: FileChange[];
  sql: string[];
}

export interface Finding {
  id: string;
  title: string;
  status: FindingStatus;
  message: string;
  repair?: Repair;
}

export interface DoctorCheck {
  id: string;
  title: string;
  /**
   * `planned`: files as the repairs of the checks before this one leave them (path -> text). A
   * check that repairs a file an earlier repair also changes starts from there, so that both
   * land in one run (the later write wins).
   */
  examine(state: ProjectState, planned: Readonly<Record<string, string>>): Omit<Finding, 'id' | 'title'>;
}

const pass = (message: string) => ({ status: 'pass' as const, message });
const warn = (message: string) => ({ status: 'warn' as const, message });

/** Generated files that `authstrap generate` would change, with what is on disk now. */
function staleGenerated(state: ProjectState, select: (path: string, onDisk: string) => boolean): FileChange[] {
  return (state.generatePlan?.writes ?? [])
    .filter((write) => write.path.startsWith('src/generated/') && write.action !== 'remove')
    .map((write) => ({ path: write.path, before: state.generatedOnDisk?.[write.path] ?? '', after: write.contents ?? '' }))
    .filter((change) => select(change.path, change.before));
}

/** An entity's schema file declares `id` in the output object and in the create input. */
const declaresIds = (source: string) => (source.match(/^\s+id: z\./gm) ?? []).length >= 2;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const columnName = (column: LiveColumn) => `${column.table}.${column.column}`;

/** Tables in an order where every table comes after the tables it references (parents are backfilled first). */
function parentsFirst(tables: Table[]): Table[] {
  const ordered: Table[] = [];
  const visit = (table: Table, seen: Set<string>) => {
    if (ordered.includes(table) || seen.has(table.name)) return;
    seen.add(table.name);
    for (const name of table.dependsOn) {
      const parent = tables.find((candidate) => candidate.name === name);
      if (parent) visit(parent, seen);
    }
    ordered.push(table);
  };
  for (const table of tables) visit(table, new Set());
  return ordered;
}

/** Why a database check cannot run, as a pass (no database: nothing to check) or a warning (no schema). */
function databaseUnchecked(state: ProjectState) {
  if (!state.database) return pass(`database not checked: ${state.databaseNote ?? 'no database'}`);
  if (!state.schema) return warn(`cannot read the schema: ${state.schemaProblem ?? 'unknown problem'}`);
  return undefined;
}

export const doctorChecks: DoctorCheck[] = [
  {
    id: 'name-clash',
    title: 'No entity name clashes with an auth entity',
    examine(state) {
      if (state.nameClashProblem) return warn(`cannot read ${schemaFileName}: ${state.nameClashProblem}`);
      const clash = state.nameClash;
      if (!clash) return pass(state.schema ? (state.schema.auth ? 'no entity is named like User, account, session, verification, Organization or member' : 'auth is off') : `${schemaFileName} has no clashing entity names`);
      const named = clash.edit.renames.map((rename) => `${rename.from} (table "${rename.table}")`);
      if (clash.edit.problems.length > 0) return { status: 'fail', message: `rename by hand: ${clash.edit.problems.join('; ')}` };
      const renamed = clash.edit.renames.map((rename) => `${rename.from} -> ${rename.to}`).join(', ');
      const message = `${named.join(', ')} ${clash.edit.renames.length === 1 ? 'clashes' : 'clash'} with the auth entities, so the schema does not load`;
      const schemaFile: FileChange = { path: schemaFileName, before: clash.edit.before, after: clash.edit.after };
      if (!clash.generatePlan || clash.generatePlan.problems.length > 0) {
        const problem = clash.problem ?? clash.generatePlan?.problems.join('; ') ?? 'unknown problem';
        return {
          status: 'fail',
          message: `${message}; after renaming, the schema still has problems: ${problem}`,
          repair: { summary: `rename ${renamed} (keeping their tables) in ${schemaFileName}, then fix the rest and run authstrap generate`, files: [schemaFile], sql: [] },
        };
      }
      const generated = clash.generatePlan.writes
        .filter((write) => write.action !== 'remove')
        .map((write) => ({ path: write.path, before: clash.generatedOnDisk[write.path] ?? '', after: write.contents ?? '' }));
      const removed = clash.generatePlan.writes.filter((write) => write.action === 'remove').map((write) => write.path);
      return {
        status: 'fail',
        message,
        repair: {
          summary: `rename ${renamed} (keeping their tables) in ${schemaFileName} and regenerate ${plural(generated.length, 'file')}${removed.length ? `; then run authstrap generate to remove ${removed.join(', ')}` : ''}`,
          files: [schemaFile, ...generated],
          sql: [],
        },
      };
    },
  },
  {
    id: 'id-field',
    title: 'Every entity type has its id',
    examine(state) {
      if (!state.generatePlan) return warn(`cannot read the schema: ${state.schemaProblem ?? 'unknown problem'}`);
      if (state.generatePlan.problems.length) return warn(`authstrap generate cannot run: ${state.generatePlan.problems.join('; ')}`);
      const broken = staleGenerated(state, (file, onDisk) => file.endsWith('.schema.ts') && !declaresIds(onDisk));
      if (broken.length === 0) return pass('the output and create types of every entity declare id');
      return {
        status: 'fail',
        message: `${broken.map((change) => change.path).join(', ')} ${broken.length === 1 ? 'lacks' : 'lack'} id in the output or create type`,
        repair: { summary: `re-render ${broken.length} schema file${broken.length === 1 ? '' : 's'} from authstrap.schema.ts`, files: broken, sql: [] },
      };
    },
  },
  {
    id: 'module-wiring',
    title: 'Every generated router is mounted',
    examine(state) {
      if (!state.generatePlan) return warn(`cannot read the schema: ${state.schemaProblem ?? 'unknown problem'}`);
      if (state.generatePlan.problems.length) return warn(`authstrap generate cannot run: ${state.generatePlan.problems.join('; ')}`);
      const changes = staleGenerated(state, (file, onDisk) => !(file.endsWith('.schema.ts') && !declaresIds(onDisk)));
      const problems = changes.map((change) => `${change.path} is ${change.before ? 'out of date' : 'missing'}`);
      const app = state.files['src/app.ts'] ?? '';
      if (app && !/\bgeneratedRouter\(/.test(app)) {
        const mounted = mountGeneratedRouter(app);
        if (mounted) changes.push({ path: 'src/app.ts', before: app, after: mounted });
        problems.push('src/app.ts does not mount generatedRouter');
        if (!mounted) return { status: 'fail', message: `${problems.join('; ')}; add app.use(generatedRouter({ db, auth, config })) before the 404 handler by hand` };
      }
      if (changes.length === 0) return pass('src/app.ts mounts generatedRouter, and src/generated matches the schema');
      return { status: 'fail', message: problems.join('; '), repair: { summary: `write ${changes.length} file${changes.length === 1 ? '' : 's'} (${changes.map((change) => change.path).join(', ')})`, files: changes, sql: [] } };
    },
  },
  {
    id: 'credential-provider',
    title: "Password accounts have providerId 'credential'",
    examine(state) {
      const service = state.files['src/extensions/auth/auth.service.ts'] ?? '';
      const insert = /INSERT INTO "account" \("userId", "accountId", "providerId", "password"\) VALUES \(\$1, \$2, '([^']*)', \$3\)/.exec(service);
      const files: FileChange[] = [];
      const problems: string[] = [];
      if (insert && insert[1] !== 'credential') {
        problems.push(`auth.service.ts creates password accounts with providerId '${insert[1]}': sign-up works, every sign-in fails`);
        files.push({ path: 'src/extensions/auth/auth.service.ts', before: service, after: service.replace(insert[0], insert[0].replace(`'${insert[1]}'`, "'credential'")) });
      }
      const wrong = state.database?.wrongProviderAccounts ?? 0;
      const sql: string[] = [];
      if (wrong > 0) {
        problems.push(`${wrong} account${wrong === 1 ? ' has' : 's have'} a password but providerId is not 'credential', so ${wrong === 1 ? 'its user' : 'their users'} cannot sign in`);
        // accountId follows: a password account is keyed by its user. Users who already have a
        // credential account are left alone rather than given a second one.
        sql.push(
          `UPDATE "account" AS a SET "providerId" = 'credential', "accountId" = a."userId"::text, "updatedAt" = now()
  WHERE a."password" IS NOT NULL AND a."providerId" IS DISTINCT FROM 'credential'
    AND NOT EXISTS (SELECT 1 FROM "account" c WHERE c."userId" = a."userId" AND c."providerId" = 'credential')`,
        );
      }
      if (problems.length === 0) {
        if (!insert && service) return warn('auth.service.ts was changed: check by hand that password accounts get providerId \'credential\'');
        return pass(state.database ? "sign-up writes 'credential', and every password account has it" : `sign-up writes 'credential' (database not checked: ${state.databaseNote ?? 'no database'})`);
      }
      const summary = [files.length ? "make sign-up write 'credential'" : '', wrong ? `set providerId = 'credential' on ${wrong} account${wrong === 1 ? '' : 's'}` : ''].filter(Boolean).join('; ');
      return { status: 'fail', message: problems.join('; '), repair: { summary, files, sql } };
    },
  },
  {
    id: 'cors-origin',
    title: 'CORS allows the frontend',
    examine(state) {
      const envFile = state.files['.env'] ?? '';
      if (!envFile) return warn('no .env: ALLOWED_ORIGINS is not set, so no browser origin may call the API');
      const origins = allowedOrigins(state.env);
      const wanted = [...new Set(state.frontends.map((frontend) => frontend.origin))];
      const missing = wanted.filter((origin) => !origins.includes(origin));
      const wildcard = origins.includes('*');
      if (!wildcard && missing.length === 0) {
        return origins.length === 0 && wanted.length === 0
          ? warn('ALLOWED_ORIGINS is empty and no frontend was found: browsers cannot call the API with cookies')
          : pass(`ALLOWED_ORIGINS=${origins.join(',')}${wanted.length ? ` (frontends: ${state.frontends.map((frontend) => path.relative(state.dir, frontend.dir) || '.').join(', ')})` : ''}`);
      }
      const fixed = [...origins.filter((origin) => origin !== '*'), ...missing].join(',');
      const after = withEnvValue(envFile, 'ALLOWED_ORIGINS', fixed);
      const reasons = [
        ...(wildcard ? ['"*" cannot be used with cookies (browsers refuse credentials for a wildcard)'] : []),
        ...(missing.length ? [`the frontend origin ${missing.join(', ')} is not in ALLOWED_ORIGINS`] : []),
      ];
      return { status: 'fail', message: reasons.join('; '), repair: { summary: `ALLOWED_ORIGINS=${fixed} in .env`, files: [{ path: '.env', before: envFile, after }], sql: [] } };
    },
  },
  {
    id: 'nullability',
    title: 'Auth columns have the right nullability',
    examine(state) {
      const unchecked = databaseUnchecked(state);
      if (unchecked) return unchecked;
      const live = state.database!.columns;
      const authTables = new Set(state.schema!.entities.filter((entity) => entity.builtin).map((entity) => entity.table));
      const sql: string[] = [];
      const repairable: string[] = [];
      const unrepairable: string[] = [];
      for (const table of databaseModel(state.schema!).tables.filter((candidate) => authTables.has(candidate.name))) {
        for (const column of table.columns) {
          // organizationId is the not-null-rows check's: it backfills before setting NOT NULL.
          if (column.name === 'organizationId') continue;
          const actual = live.find((candidate) => candidate.table === table.name && candidate.column === column.name);
          if (!actual || actual.nullable === column.nullable) continue;
          const target = `ALTER TABLE ${quote(table.name)} ALTER COLUMN ${quote(column.name)}`;
          if (column.nullable) {
            repairable.push(`${columnName(actual)} is NOT NULL but optional`);
            sql.push(`${target} DROP NOT NULL`);
          } else if (actual.nulls === 0) {
            repairable.push(`${columnName(actual)} is nullable but required`);
            sql.push(`${target} SET NOT NULL`);
          } else {
            unrepairable.push(`${columnName(actual)} is required but ${plural(actual.nulls, 'row has', 'rows have')} no value: fill ${actual.nulls === 1 ? 'it' : 'them'} in by hand, then run fix again`);
          }
        }
      }
      if (repairable.length === 0 && unrepairable.length === 0) return pass('the auth tables match the schema: required columns are NOT NULL, optional ones nullable');
      const message = [...repairable, ...unrepairable].join('; ');
      if (sql.length === 0) return { status: 'fail', message };
      return { status: 'fail', message, repair: { summary: `change the nullability of ${plural(sql.length, 'column')}`, files: [], sql } };
    },
  },
  {
    id: 'not-null-rows',
    title: 'Tenant-scoped rows all have an organization',
    examine(state) {
      const unchecked = databaseUnchecked(state);
      if (unchecked) return unchecked;
      const live = state.database!.columns;
      // Every table whose organizationId the schema requires: the tenant-scoped ones, and member.
      const tables = parentsFirst(databaseModel(state.schema!).tables.filter((table) => table.columns.some((column) => column.name === 'organizationId' && !column.nullable)));
      const problems: string[] = [];
      const sql: string[] = [];
      let orphans = 0;
      for (const table of tables) {
        const actual = live.find((candidate) => candidate.table === table.name && candidate.column === 'organizationId');
        if (!actual?.nullable) continue;
        const target = `ALTER TABLE ${quote(table.name)} ALTER COLUMN "organizationId"`;
        problems.push(`${table.name}.organizationId is nullable${actual.nulls ? ` and ${plural(actual.nulls, 'row has', 'rows have')} no organization (invisible to every member)` : ''}`);
        if (actual.nulls > 0) sql.push(`UPDATE ${quote(table.name)} SET "organizationId" = ${literal(defaultOrganization.id)}::uuid WHERE "organizationId" IS NULL`);
        sql.push(`${target} SET NOT NULL`);
        // So that an app of its own that inserts without an organization keeps working.
        if (actual.default === null) sql.push(`${target} SET DEFAULT ${literal(defaultOrganization.id)}::uuid`);
        orphans += actual.nulls;
      }
      if (problems.length === 0) return pass('every tenant-scoped table has organizationId NOT NULL');
      if (orphans > 0) {
        sql.unshift(
          `INSERT INTO "Organization" ("id", "name", "slug") VALUES (${literal(defaultOrganization.id)}::uuid, ${literal(defaultOrganization.name)}, ${literal(defaultOrganization.slug)}) ON CONFLICT DO NOTHING`,
        );
      }
      const summary = `${orphans ? `move ${plural(orphans, 'row')} into "${defaultOrganization.name}" (id ${defaultOrganization.id}), then ` : ''}make organizationId NOT NULL in ${plural(problems.length, 'table')}`;
      return { status: 'fail', message: problems.join('; '), repair: { summary, files: [], sql } };
    },
  },
  {
    id: 'adapter-version',
    title: 'The auth adapter is 2.0.2 or newer',
    examine(state) {
      const minimum = [2, 0, 2];
      const old: { frontend: ProjectState['frontends'][number]; name: string; range: string }[] = [];
      const unreadable: string[] = [];
      let seen = 0;
      for (const frontend of state.frontends) {
        for (const field of ['dependencies', 'devDependencies'] as const) {
          for (const [name, range] of Object.entries<string>(frontend.packageJson[field] ?? {})) {
            if (!isAdapterPackage(name, state.adapterPackages)) continue;
            seen += 1;
            const version = lowestVersion(range);
            if (!version) unreadable.push(`${name}@${range}`);
            else if (compareVersions(version, minimum) < 0) old.push({ frontend, name, range });
          }
        }
      }
      if (old.length === 0) {
        if (unreadable.length) return warn(`cannot tell the version of ${unreadable.join(', ')}; it must be 2.0.2 or newer`);
        return pass(seen ? `every auth adapter allows only 2.0.2 or newer` : `no known auth adapter (${knownAdapterPackages.join(', ')}) in the frontends (name another with --adapter-package)`);
      }
      // One write per package.json, with every old adapter in it raised; the rest of the file as it was.
      const files: FileChange[] = [];
      for (const frontend of new Set(old.map((entry) => entry.frontend))) {
        let after = frontend.packageJsonText;
        for (const entry of old.filter((candidate) => candidate.frontend === frontend)) {
          after = after.replace(`${JSON.stringify(entry.name)}: ${JSON.stringify(entry.range)}`, `${JSON.stringify(entry.name)}: "^2.0.2"`);
        }
        files.push({ path: path.relative(state.dir, path.join(frontend.dir, 'package.json')), before: frontend.packageJsonText, after });
      }
      return {
        status: 'fail',
        message: `${old.map((entry) => `${entry.name}@${entry.range}`).join(', ')}: versions before 2.0.2 do not set providerId to 'credential', so sign-in fails after sign-up`,
        repair: { summary: `require ^2.0.2 in ${files.map((file) => file.path).join(', ')} (then reinstall the frontend)`, files, sql: [] },
      };
    },
  },
  // New checks live in checks/, one file each; after cors-origin, whose .env changes it builds on.
  loopbackHostsCheck,
];

/** Puts `app.use(generatedRouter(...))` back before the 404 handler, with its import. */
function mountGeneratedRouter(app: string): string | undefined {
  const notFound = /^([ \t]*)app\.use\(unknownRoute\);/m.exec(app);
  if (!notFound) return undefined;
  let result = app.replace(notFound[0], `${notFound[1]}app.use(generatedRouter({ db, auth, config }));\n${notFound[0]}`);
  if (!/import \{ generatedRouter \}/.test(result)) result = `import { generatedRouter } from './generated/index.js';\n${result}`;
  return result;
}

/**
 * The Better Auth adapters this check knows: authstrap's own, and the one the spec's 2.0.2 rule
 * was written for (whose releases before 2.0.1 wrote `provider`/`providerAccountId` instead of
 * `providerId`/`accountId`, and 2.0.1 still left providerId unset for passwords). Another
 * package is checked when it is named with --adapter-package.
 */
export const knownAdapterPackages = ['@authstrap/better-auth-adapter', '@apso/better-auth-adapter'];

function isAdapterPackage(name: string, named: string[]): boolean {
  return knownAdapterPackages.includes(name) || named.includes(name);
}

/** The lowest version a range allows: `^1.9.0` -> [1, 9, 0]; `latest`, `*` or a URL -> undefined. */
function lowestVersion(range: string): number[] | undefined {
  // A packed tarball (`file:.../authstrap-better-auth-adapter-2.0.2.tgz`, as setup --frontend installs it) names its version.
  const tarball = /^file:.*-(\d+)\.(\d+)\.(\d+)\.tgz$/.exec(range.trim());
  if (tarball) return [Number(tarball[1]), Number(tarball[2]), Number(tarball[3])];
  const match = /^\s*(?:[\^~]|>=|=)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(range);
  return match ? [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)] : undefined;
}

function compareVersions(a: number[], b: number[]): number {
  for (let index = 0; index < 3; index += 1) if (a[index] !== b[index]) return a[index]! - b[index]!;
  return 0;
}

export function examineAll(state: ProjectState): Finding[] {
  const planned: Record<string, string> = {};
  return doctorChecks.map((check) => {
    const finding: Finding = { id: check.id, title: check.title, ...check.examine(state, planned) };
    for (const file of finding.repair?.files ?? []) planned[file.path] = file.after;
    return finding;
  });
}
