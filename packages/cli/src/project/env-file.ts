import fs from 'node:fs';
import path from 'node:path';

/** Reads `KEY=value` lines (the .env format: comments, blank lines, optional quotes). Pure. */
export function parseEnv(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match) continue;
    let value = match[2]!;
    // Read as Node's loader (process.loadEnvFile, which the backend uses) reads it: a quoted value
    // may be followed by a comment (KEY="a b" # note), and in an unquoted one a comment starts at
    // the first # (KEY= # note is empty), so that verify sees the values the backend sees.
    const quoted = /^(['"])(.*)\1(?:\s*#.*)?$/.exec(value);
    if (quoted) value = quoted[2]!;
    else value = value.replace(/#.*$/, '').trimEnd();
    values[match[1]!] = value;
  }
  return values;
}

/** The origins in ALLOWED_ORIGINS (comma-separated), without blanks. */
export const allowedOrigins = (env: Record<string, string>) => (env.ALLOWED_ORIGINS ?? '').split(',').map((origin) => origin.trim()).filter(Boolean);

/** The .env text with `key=value`: its line replaced where there is one, appended otherwise. */
export function withEnvValue(text: string, key: string, value: string): string {
  const line = new RegExp(`^${key}=.*$`, 'm');
  return line.test(text) ? text.replace(line, () => `${key}=${value}`) : `${text.replace(/\n?$/, '\n')}${key}=${value}\n`;
}

/** The project's .env as a map; empty when there is none. */
export function readProjectEnv(projectDir: string): Record<string, string> {
  const file = path.join(projectDir, '.env');
  return fs.existsSync(file) ? parseEnv(fs.readFileSync(file, 'utf8')) : {};
}

/** Where a setting came from, for messages. */
export type SettingSource = 'environment' | '.env';

/**
 * A variable as the backend reads it: from the process environment when it is set there, else
 * from the project's .env (Node's process.loadEnvFile, which the backend uses, never overrides a
 * variable that is set). Blank counts as unset, as the backend's config has it.
 */
export function backendSetting(name: string, dotEnv: Record<string, string>, environment: NodeJS.ProcessEnv = process.env): { value: string; source: SettingSource } | undefined {
  const [value, source] = environment[name] !== undefined ? [environment[name]!, 'environment' as const] : [dotEnv[name] ?? '', '.env' as const];
  return value.trim() ? { value, source } : undefined;
}

/** `postgresql://app:secret@db/app` -> `postgresql://app:***@db/app`, for messages. */
export function maskPassword(url: string): string {
  // Up to the last '@': URL parsers take an unencoded '@' in a password as part of it, so the
  // first '@' would leave the rest of such a password in the message.
  return url.replace(/(\/\/[^:/@]*:).*@/, '$1***@');
}
