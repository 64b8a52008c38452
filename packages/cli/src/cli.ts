#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { CliError } from './cli-error.js';
import { addAuthCommand } from './commands/add-auth.js';
import { fixCommand } from './commands/fix.js';
import { generateCommand } from './commands/generate.js';
import { operatorCommand } from './commands/operator.js';
import { settleCommand } from './commands/settle.js';
import { setupCommand } from './commands/setup.js';
import { verifyCommand } from './commands/verify.js';
import { SchemaError } from './schema/index.js';
import { isJsonOutput, printJson, useJsonOutput } from './ui/output.js';
import { version } from './version.js';

const jsonHelp = 'print one JSON document on stdout (progress goes to stderr)';
// Only setup asks questions; the other commands take --yes too, so that a CI script may pass it everywhere.
const yesHelp = 'ask nothing (this command never asks; accepted everywhere for scripts)';

const program = new Command()
  .name('authstrap')
  .description('An authenticated, multi-tenant Express 5 + PostgreSQL backend, and the tools to keep it healthy')
  .version(version)
  .exitOverride()
  .showHelpAfterError('(run `authstrap --help` for usage)')
  .hook('preAction', (_program, command) => {
    if (command.opts().json === true) useJsonOutput();
  });

program
  .command('generate')
  .argument('[dir]', 'the project folder', '.')
  .description('Re-render src/generated/ and write a migration for what changed in authstrap.schema.ts')
  .option('--check', "change nothing; exit 1 if the project, or its database's row-level security, is not up to date with its schema")
  .option('--dry-run', 'print the files that would change and the migration SQL, and change nothing')
  .option('--allow-drop', 'allow a migration that drops a table or column removed from the schema')
  .option('--allow-type-change', 'convert columns whose type changed with ALTER COLUMN ... TYPE ... USING (review the migration)')
  .option('--accept-manual', 'the newest migration, written by hand, covers the schema change: update the snapshot, write no SQL')
  .option('--json', jsonHelp)
  .option('--yes', yesHelp)
  .action((dir: string, options) => generateCommand(dir, options));

program
  .command('resolve')
  .argument('<files...>', 'owned files whose upgrade you have merged (conflict markers edited out)')
  .description("Record that an upgrade's merge of these files is done: the next upgrade merges from them as they are")
  .option('--dir <dir>', 'the project folder (default: the current folder)')
  .option('--yes', yesHelp)
  .action((files: string[], options) => settleCommand('resolve', files, options));

program
  .command('decline')
  .argument('<files...>', 'owned files to keep as they are, without this version of authstrap\'s changes to them')
  .description('Record that you keep these files as they are: the upgrade stops asking, and the next one merges from this version')
  .option('--dir <dir>', 'the project folder (default: the current folder)')
  .option('--yes', yesHelp)
  .action((files: string[], options) => settleCommand('decline', files, options));

program
  .command('setup')
  .alias('setup-backend-with-auth')
  .description('Create a new backend with auth and tenancy, install it, start it and verify it')
  .option('--project-name <name>', 'name of the backend (and of its folder, unless --dir)')
  .option('--dir <dir>', 'folder to create it in (default: ./<project-name>)')
  .option('--backend-port <port>', 'port the backend listens on', undefined)
  .option('--frontend [dir]', 'create a Next.js frontend in dir (default: <project-name>-web), or connect the Next.js app there; in an existing backend folder, only that')
  .option('--frontend-port <port>', 'port of the frontend allowed by CORS (default: 3001 with --frontend, else 5173)', undefined)
  .option('--dry-run', 'with --frontend in an existing backend: print the changes, write nothing')
  .option('--database-url <url>', 'a PostgreSQL database (created if missing)')
  .option('--db <kind>', '"embedded" (default) or "postgres" (with --database-url)')
  .option('--package-manager <name>', 'npm, pnpm, yarn or bun (default: the one running this)')
  .option('--yes', 'ask nothing; use flags and defaults')
  .option('--no-install', 'do not install dependencies (and so do not start or verify)')
  .option('--no-start', 'do not start and verify the backend')
  .option('--force', 'write into a folder that is not empty')
  .option('--json', `${jsonHelp}; asks nothing, like --yes`)
  .action((options) => setupCommand(options));

program
  .command('add-auth')
  .alias('add-auth-to-existing')
  .argument('[dir]', 'the authstrap project; or an app without one (its backend goes into <dir>-auth beside it); or, with --database-url, a new folder for the backend', '.')
  .description('Add the auth entities and tenancy to an existing authstrap project or an existing database, keeping its data')
  .option('--dry-run', 'print the plan (schema diff, files, migration SQL) and change nothing')
  .option('--rename <From=To...>', 'the new name of an entity that clashes with an auth entity (default: App<Name>)')
  .option('--database-url <url>', 'an existing database without authstrap.schema.ts: read its tables into one (default: DATABASE_URL of the app\'s .env, or of the environment)')
  .option('--backend-port <port>', 'the new backend\'s port beside an existing database (default 3000; 3001 when the app\'s .env takes 3000)')
  .option('--no-install', 'with --database-url: write the backend but do not install, start or verify it')
  .option('--no-verify', 'do not start and verify the backend afterwards')
  .option('--json', jsonHelp)
  .option('--yes', yesHelp)
  .action((dir: string, options) => addAuthCommand(dir, options));

program
  .command('fix')
  .alias('fix-auth-issues')
  .argument('[dir]', 'the project folder', '.')
  .description('Find and repair the known ways an auth setup breaks (analyze, plan, apply, check again)')
  .option('--dry-run', 'print the plan (file diffs and SQL) and change nothing')
  .option('--json', jsonHelp)
  .option('--yes', yesHelp)
  .option('--database-url <url>', 'the PostgreSQL database (default: DATABASE_URL from the environment, then .env)')
  .option('--frontend <dir...>', 'frontend folders whose dev-server origin CORS must allow (default: found next to the project)')
  .option('--adapter-package <name...>', 'another auth adapter package to hold to 2.0.2 (known already: @authstrap/better-auth-adapter, @apso/better-auth-adapter)')
  .action(async (dir: string, options) => {
    const report = await fixCommand(dir, options);
    if (!report.ok) process.exitCode = 1;
  });

program
  .command('verify')
  .alias('verify-auth-setup')
  .description('Check a running backend and its database (tables, docs, sign-up, sign-in, sessions, tenant isolation), and in a project folder the checks of `fix` too')
  .option('--url <url>', 'the backend (default: AUTH_URL, else http://localhost:PORT)')
  .option('--database-url <url>', 'its PostgreSQL database (default: DATABASE_URL)')
  .option('--service-key <key>', "the backend's SERVICE_API_KEY: checks what a Better Auth adapter does, and removes the test users through the API (default: SERVICE_API_KEY)")
  .option('--dir <dir>', 'the project folder: its .env is read, and its files are examined as fix does', '.')
  .option('--frontend <url>', 'also check a frontend running Better Auth on the adapter: its page, sign-up and sign-in through it')
  .option('--json', jsonHelp)
  .option('--yes', yesHelp)
  .addHelpText(
    'after',
    '\nSettings come in the order the backend takes them: a flag, then the process environment\n(AUTH_URL, PORT, DATABASE_URL, EMBEDDED_DB_DIR, SERVICE_API_KEY), then the .env of --dir.',
  )
  .action(async (options) => {
    const report = await verifyCommand(options);
    if (!report.ok) process.exitCode = 1;
  });

program
  .command('operator')
  .argument('<action>', 'grant, revoke or list')
  .argument('[email]', "the user's e-mail address (grant and revoke)")
  .description("Grant or revoke the platform's operator role (the backend's /api/operator routes), or list the operators")
  .option('--dir <dir>', 'the project folder: its .env names the database (default: the current folder)')
  .option('--database-url <url>', 'the PostgreSQL database (default: DATABASE_URL from the environment, then .env; else the embedded database, when no backend holds it)')
  .option('--json', jsonHelp)
  .option('--yes', yesHelp)
  .action((action: string, email: string | undefined, options) => operatorCommand(action, email, options));

try {
  await program.parseAsync();
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and --version "fail" with exit code 0; a usage mistake has been printed already.
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  // Ctrl+C at a prompt (@inquirer's ExitPromptError) is the user's choice, not a crash: no stack
  // trace; 130 is the shell's code for an interrupt. Prompts come before anything is written.
  if (error instanceof Error && error.name === 'ExitPromptError') {
    console.error('\nSetup cancelled; nothing was written.');
    process.exit(130);
  }
  if (error instanceof CliError || error instanceof SchemaError) {
    const exitCode = error instanceof CliError ? error.exitCode : 1;
    console.error(error.message);
    if (isJsonOutput()) printJson({ ok: false, exitCode, error: error.message });
    process.exit(exitCode);
  }
  console.error('authstrap failed unexpectedly. Please report this with the output below.');
  throw error;
}
