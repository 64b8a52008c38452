#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { CliError } from './cli-error.js';
import { generateCommand } from './commands/generate.js';
import { SchemaError } from './schema/index.js';
import { version } from './version.js';

const program = new Command()
  .name('authstrap')
  .description('An authenticated, multi-tenant Express 5 + PostgreSQL backend, and the tools to keep it healthy')
  .version(version)
  .exitOverride()
  .showHelpAfterError('(run `authstrap --help` for usage)');

program
  .command('generate')
  .argument('[dir]', 'the project folder', '.')
  .description('Re-render src/generated/ and write a migration for what changed in authstrap.schema.ts')
  .option('--check', 'change nothing; exit 1 if the project is not up to date with its schema')
  .option('--dry-run', 'print the files that would change, and change nothing')
  .option('--allow-drop', 'allow a migration that drops a table or column removed from the schema')
  .action((dir: string, options) => generateCommand(dir, options));

try {
  await program.parseAsync();
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and --version "fail" with exit code 0; a usage mistake has been printed already.
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  if (error instanceof CliError || error instanceof SchemaError) {
    console.error(error.message);
    process.exit(error instanceof CliError ? error.exitCode : 1);
  }
  console.error('authstrap failed unexpectedly. Please report this with the output below.');
  throw error;
}
