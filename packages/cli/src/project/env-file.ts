import fs from 'node:fs';
import path from 'node:path';
import util from 'node:util';

/**
 * The .env text as the backend reads it: with Node's own parser (`util.parseEnv` is what
 * `process.loadEnvFile`, which the backend uses, runs), quirks and all, so that `verify` and
 * `fix` see exactly the values the backend sees (the last assignment of a repeated key, `export`,
 * quotes, comments after values). One parser, never a second one to drift from it. Pure.
 */
export function parseEnv(text: string): Record<string, string> {
  return { ...util.parseEnv(text) } as Record<string, string>;
}

/**
 * The .env text with `key` set to `value` where the backend reads it: the last line that assigns
 * it (Node's parser lets a later assignment win) is rewritten, keeping its `export`, spacing,
 * quotes and comment; earlier assignments are commented out, so that no one edits a line the
 * backend never reads. Without such a line, one is appended. Every edit is checked by parsing
 * the result: the key must then read `value` and every other key as before (a multi-line quoted
 * value, say, can make a line mean something else than it looks); when no edit gives that,
 * undefined: the file needs a person.
 */
export function withEnvValue(text: string, key: string, value: string): string | undefined {
  const lines = text.split('\n');
  const assigning = lines.flatMap((line, index) => (Object.hasOwn(parseEnv(line), key) ? [index] : []));
  const last = assigning.at(-1);
  const candidates: string[] = [];
  if (last !== undefined) {
    const edit = (commentOut: boolean) =>
      lines.map((line, index) => (index === last ? withLineValue(line, key, value) : commentOut && assigning.includes(index) ? `# ${line.trimStart()}` : line)).join('\n');
    candidates.push(edit(true), edit(false));
  }
  const newline = text.includes('\r\n') ? '\r\n' : '\n';
  candidates.push(`${text === '' || text.endsWith('\n') ? text : `${text}${newline}`}${key}=${quoteIfNeeded(value)}${newline}`);
  const before = parseEnv(text);
  return candidates.find((candidate) => {
    const after = parseEnv(candidate);
    const others = (values: Record<string, string>) => JSON.stringify(Object.entries(values).filter(([name]) => name !== key).sort(([a], [b]) => (a < b ? -1 : 1)));
    return after[key] === value && others(after) === others(before);
  });
}

/** One `KEY=value` line with another value: its head (`export KEY = `), quotes, comment and line end kept. */
function withLineValue(line: string, key: string, value: string): string {
  const [, head, rest, cr] = new RegExp(`^(\\s*(?:export\\s+)?${key}\\s*=\\s*)(.*?)(\\r?)$`).exec(line) ?? [line, `${key}=`, '', ''];
  const quote = /^['"`]/.exec(rest!)?.[0];
  const closing = quote ? rest!.indexOf(quote, 1) : -1;
  // After a quoted value, the rest of the line is a comment; unquoted, the value ends at the first
  // #. Either comment is kept, with the space before it.
  const comment = quote ? (closing === -1 ? rest!.length : closing + 1) : rest!.search(/\s*#/);
  const tail = comment === -1 ? '' : rest!.slice(comment);
  return `${head}${quote && closing !== -1 && !value.includes(quote) ? `${quote}${value}${quote}` : quoteIfNeeded(value)}${tail}${cr}`;
}

/** A value as it can stand unquoted, or in the first quotes it does not contain. */
function quoteIfNeeded(value: string): string {
  if (!/[#'"`\n]|^\s|\s$/.test(value)) return value;
  const quote = ["'", '"', '`'].find((mark) => !value.includes(mark)) ?? '"';
  return `${quote}${value}${quote}`;
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
