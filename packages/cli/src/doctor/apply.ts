import fs from 'node:fs';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import type { DatabaseProbe } from '../verify/database.js';
import type { Finding } from './checks.js';

/** The plan as a person reads it: a unified diff per file, then the SQL. */
export function describeRepairs(findings: Finding[]): string {
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
 * Applies every repair: files first, then all SQL in one transaction, so that a failing
 * statement leaves the database as it was. A file is written only if it still holds what the
 * check saw, so a change made in between is never overwritten.
 */
export async function applyRepairs(projectDir: string, findings: Finding[], db: DatabaseProbe | undefined): Promise<void> {
  const repairs = findings.flatMap((finding) => (finding.repair ? [finding.repair] : []));
  for (const file of repairs.flatMap((repair) => repair.files)) {
    const full = path.join(projectDir, file.path);
    const current = fs.existsSync(full) ? fs.readFileSync(full, 'utf8') : '';
    if (current !== file.before) throw new Error(`${file.path} changed while fix was running; run it again`);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, file.after);
  }
  const statements = repairs.flatMap((repair) => repair.sql);
  if (statements.length === 0) return;
  if (!db) throw new Error('the repairs need the database, which could not be opened');
  await db.query('BEGIN');
  try {
    for (const statement of statements) await db.query(statement);
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK');
    throw error;
  }
}
