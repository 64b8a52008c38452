// Types of release-plan.mjs, for the tests that import it.
export const usage: string;
export function parseReleaseArgs(args: string[]): { check: boolean; keep: boolean };
export function pendingChangesets(fileNames: string[]): string[];
export function tarballName(name: string, version: string): string;
export function withAdapterVersion(source: string, version: string): string;
export function projectVersionProblems(version: string, project: { versionOutput: string; record: string; readme: string }): string[];
