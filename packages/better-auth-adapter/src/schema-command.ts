#!/usr/bin/env node
/**
 * `npx authstrap-better-auth-schema [--config lib/auth.ts] [--output better-auth.schema.json]`:
 * loads the app's own Better Auth (the `auth` its config file exports), asks its database
 * adapter, authstrapAdapter, for the schema (createSchema) and writes it where the backend's
 * `authstrap generate` reads it. Better Auth's own CLI does the same, but its current major
 * needs Node 22 and an older one is a long download; this runs on Node 20 in about a second.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** Where a Next.js (or other) app usually keeps its Better Auth, in the order they are tried. */
const configCandidates = ['lib/auth.ts', 'src/lib/auth.ts', 'auth.ts', 'src/auth.ts', 'lib/auth.js', 'src/lib/auth.js', 'auth.js', 'src/auth.js'];

class UsageError extends Error {}

interface SchemaAdapter {
  createSchema?: (options: unknown, file?: string) => Promise<{ code: string; path: string }>;
}

async function main(argv: string[]): Promise<string> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: 'string' }, output: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    return 'Usage: authstrap-better-auth-schema [--config lib/auth.ts] [--output better-auth.schema.json]\n' +
      'Writes the tables of your Better Auth options as better-auth.schema.json for `authstrap generate` (run it in the backend next).';
  }
  const config = values.config ?? configCandidates.find((candidate) => fs.existsSync(candidate));
  if (config === undefined) throw new UsageError(`No Better Auth config found (looked for ${configCandidates.join(', ')}): pass --config <file>`);
  if (!fs.existsSync(config)) throw new UsageError(`--config ${config}: no such file`);

  // TypeScript (and the app's tsconfig paths) loaded as the app's own code loads it.
  const { tsImport } = await import('tsx/esm/api');
  const loaded = (await tsImport(pathToFileURL(path.resolve(config)).href, import.meta.url).catch((error: Error) => {
    throw new UsageError(`--config ${config} could not be loaded: ${error.message.split('\n')[0]}`);
  })) as Record<string, unknown>;
  const auth = (loaded.auth ?? (loaded.default as Record<string, unknown> | undefined)?.auth ?? loaded.default) as { options?: { database?: unknown } } | undefined;
  const options = auth?.options;
  if (!options) throw new UsageError(`--config ${config}: export the Better Auth instance as \`export const auth = betterAuth({ ... })\``);
  if (typeof options.database !== 'function') throw new UsageError(`--config ${config}: its database is not authstrapAdapter({ ... })`);
  const adapter = (options.database as (options: unknown) => SchemaAdapter)(options);
  if (!adapter.createSchema) throw new UsageError(`--config ${config}: its database adapter has no createSchema; use authstrapAdapter({ ... })`);
  const schema = await adapter.createSchema(options, values.output);
  fs.mkdirSync(path.dirname(path.resolve(schema.path)), { recursive: true });
  fs.writeFileSync(schema.path, schema.code);
  const entities = Object.keys((JSON.parse(schema.code) as { entities: object }).entities);
  return `Wrote ${schema.path} (${entities.length ? entities.join(', ') : 'nothing beyond the built-in entities'}).\nNext, in the backend: npx authstrap generate, then restart it.`;
}

main(process.argv.slice(2)).then(
  (message) => console.log(message),
  (error: unknown) => {
    // A mistake of the caller's is one line; anything else is a fault of ours and keeps its stack.
    const usage = error instanceof UsageError || (error as { code?: string })?.code?.startsWith('ERR_PARSE_ARGS');
    console.error(usage ? `authstrap-better-auth-schema: ${(error as Error).message}` : error);
    process.exitCode = usage ? 2 : 1;
  },
);
