import type { ProbeContext } from './probe-context.js';
import type { ProjectSnapshot } from './project-snapshot.js';

/**
 * One known way an authstrap backend breaks, in one module: how to see it in the project's files
 * and database (`examine`, which `fix` runs, and `verify` in a project folder), how to repair it,
 * and how to see it in a running backend (`probe`, which only `verify` runs). Every part returns
 * a status and a one-line message; printing is elsewhere (ui/report.ts).
 */

/** `skip`: the check (or a part of it) could not run; the message says why. Never shown as passed. */
export type Status = 'pass' | 'warn' | 'fail' | 'skip';

export interface Outcome {
  status: Status;
  message: string;
  /** What to do about this failure, when the part knows better than its check's advice. */
  fix?: string;
}

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

export interface Finding extends Outcome {
  repair?: Repair;
}

/** A check's verdict as `fix` and `verify` report it. */
export interface CheckResult extends Finding {
  id: string;
  title: string;
  /** verify: what to run or do about a failure (names a check only when that check found it). */
  fix?: string;
  /** fix: this check failed before the repairs and passes after them. */
  repaired?: true;
  /** verify: the backend answered 429, so the check did not run (see the message for when to retry). */
  rateLimited?: true;
}

/** Files as the repairs of the checks examined before leave them (path -> text). */
export type PlannedFiles = Readonly<Record<string, string>>;

export interface Probe {
  /** 'http': against the running backend; 'database': its database, after the HTTP probes. */
  needs: 'http' | 'database';
  run(context: ProbeContext): Promise<Outcome>;
}

export interface Check {
  id: string;
  title: string;
  /**
   * Pure: the snapshot in, a finding (and its repair) out. `planned` lets a check that repairs a
   * file an earlier check's repair also changes start from there, so both land in one run.
   */
  examine?(project: ProjectSnapshot, planned: PlannedFiles): Finding;
  probe?: Probe;
  /** Checks whose failure explains a failed probe of this one: only those are named in its hint. */
  causes?: string[];
  /** What to do when the probe fails and no check explains it. Names no check. */
  advice?: string;
}

export const pass = (message: string): Outcome => ({ status: 'pass', message });
export const warn = (message: string): Outcome => ({ status: 'warn', message });
export const fail = (message: string): Outcome => ({ status: 'fail', message });
export const skip = (message: string): Outcome => ({ status: 'skip', message });

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
