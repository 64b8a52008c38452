import path from 'node:path';
import type { ProjectState } from './project-state.js';

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
  examine(state: ProjectState): Omit<Finding, 'id' | 'title'>;
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

export const doctorChecks: DoctorCheck[] = [
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
      const origins = (state.env.ALLOWED_ORIGINS ?? '').split(',').map((origin) => origin.trim()).filter(Boolean);
      const wanted = [...new Set(state.frontends.map((frontend) => frontend.origin))];
      const missing = wanted.filter((origin) => !origins.includes(origin));
      const wildcard = origins.includes('*');
      if (!wildcard && missing.length === 0) {
        return origins.length === 0 && wanted.length === 0
          ? warn('ALLOWED_ORIGINS is empty and no frontend was found: browsers cannot call the API with cookies')
          : pass(`ALLOWED_ORIGINS=${origins.join(',')}${wanted.length ? ` (frontends: ${state.frontends.map((frontend) => path.relative(state.dir, frontend.dir) || '.').join(', ')})` : ''}`);
      }
      const fixed = [...origins.filter((origin) => origin !== '*'), ...missing].join(',');
      const after = /^ALLOWED_ORIGINS=.*$/m.test(envFile) ? envFile.replace(/^ALLOWED_ORIGINS=.*$/m, `ALLOWED_ORIGINS=${fixed}`) : `${envFile.replace(/\n?$/, '\n')}ALLOWED_ORIGINS=${fixed}\n`;
      const reasons = [
        ...(wildcard ? ['"*" cannot be used with cookies (browsers refuse credentials for a wildcard)'] : []),
        ...(missing.length ? [`the frontend origin ${missing.join(', ')} is not in ALLOWED_ORIGINS`] : []),
      ];
      return { status: 'fail', message: reasons.join('; '), repair: { summary: `ALLOWED_ORIGINS=${fixed} in .env`, files: [{ path: '.env', before: envFile, after }], sql: [] } };
    },
  },
];

/** Puts `app.use(generatedRouter(...))` back before the 404 handler, with its import. */
function mountGeneratedRouter(app: string): string | undefined {
  const notFound = /^([ \t]*)app\.use\(unknownRoute\);/m.exec(app);
  if (!notFound) return undefined;
  let result = app.replace(notFound[0], `${notFound[1]}app.use(generatedRouter({ db, auth, config }));\n${notFound[0]}`);
  if (!/import \{ generatedRouter \}/.test(result)) result = `import { generatedRouter } from './generated/index.js';\n${result}`;
  return result;
}

export function examineAll(state: ProjectState): Finding[] {
  return doctorChecks.map((check) => ({ id: check.id, title: check.title, ...check.examine(state) }));
}
