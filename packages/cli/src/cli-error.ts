/** A failure to report as one message and an exit code: 1 a step failed, 2 bad usage. Never a stack. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
