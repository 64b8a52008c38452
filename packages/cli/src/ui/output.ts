/**
 * `--json`: stdout carries exactly one JSON document, for scripts; everything written for people
 * (progress, checklists, next steps) goes to stderr instead, so that it can still be read.
 */
let jsonOutput = false;
let jsonPrinted = false;

export function useJsonOutput(): void {
  jsonOutput = true;
  console.log = console.error;
}

export const isJsonOutput = () => jsonOutput;

/** The one JSON document of this run; later calls (an error after a result) print nothing. */
export function printJson(value: unknown): void {
  if (jsonPrinted) return;
  jsonPrinted = true;
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
