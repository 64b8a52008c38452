import fs from 'node:fs';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { CliError } from '../cli-error.js';
import type { DatabaseProbe } from '../verify/database.js';
import type { CheckResult } from './check.js';

/** The plan as a person reads it: a unified diff per file, then the SQL. */
export function describeRepairs(findings: CheckResult[]): string {
  const parts: string[] = [];
  for (const finding of findings) {
    if (!finding.repair) continue;
    parts.push(`# ${finding.id}: ${finding.repair.summary}`);
    for (const file of finding.repair.files) {
      parts.push(createTwoFilesPatch(`a/${file.path}`, `b/${file.path}`, file.before, file.after, '', '', { context: 2 }).trimEnd());
    }
    for (const statement of finding.repair.sql) parts.push(`${statement};`);
  }
  return parts.join('\n\n');
}

/**
 * Applies every repair: SQL first, all in one transaction, then the files. Nothing changes until
 * every file is known to still hold what the checks saw (a change made in between is never
 * overwritten), and a failing statement rolls the database back before any file is written, so
 * a failed repair leaves the project as it was.
 */
export async function applyRepairs(projectDir: string, findings: CheckResult[], db: DatabaseProbe | undefined): Promise<void> {
  const repairs = findings.flatMap((finding) => (finding.repair ? [finding.repair] : []));
  const files = repairs.flatMap((repair) => repair.files);
  for (const file of files) {
    const full = path.join(projectDir, file.path);
    const current = fs.existsSync(full) ? fs.readFileSync(full, 'utf8') : '';
    if (current !== file.before) throw new CliError(`${file.path} changed while fix was running; nothing was changed, run it again`, 1);
  }
  const statements = repairs.flatMap((repair) => repair.sql);
  if (statements.length > 0) {
    if (!db) throw new CliError('the repairs need the database, which could not be opened', 1);
    await db.query('BEGIN');
    try {
      // The tables' event triggers wait for the commit (the streams' order); a repair that
      // changes rows and then the table needs them to fire as each statement ends, as before.
      await db.query('SET CONSTRAINTS ALL IMMEDIATE');
      for (const statement of statements) await db.query(statement);
      await db.query('COMMIT');
    } catch (error) {
      await db.query('ROLLBACK');
      throw new CliError(`The repairs could not be applied, so nothing was changed (database and files as before): ${explainFailure(error)}`, 1);
    }
  }
  for (const file of files) {
    const full = path.join(projectDir, file.path);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, file.after);
  }
}

/** A failed repair statement, as what to do about it. */
function explainFailure(error: unknown): string {
  const { message, detail, code } = error as { message: string; detail?: string; code?: string };
  const text = `${message}${detail ? ` (${detail})` : ''}`;
  if (code === '23505') {
    return `${text}. Moving rows into the default organization would give two rows the same key: rows without an organization that share a unique value with each other or with a row already there. Give one of them another value (or an organization) by hand, then run fix again.`;
  }
  return text;
}
