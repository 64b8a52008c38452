// Types for pgbouncer.mjs, for the TypeScript tests.
export const pgbouncerBinary: string | undefined;
/** [major, minor], e.g. [1, 18]. */
export const pgbouncerVersion: [number, number] | undefined;
export function pgbouncerConfigFromDocs(options: { target: URL; listenPort: number; authFile: string }): string;

export interface PgBouncer {
  port: number;
  pid: number;
  /** `directUrl` (a database on the PostgreSQL server behind it) through PgBouncer. */
  urlFor(directUrl: string): string;
  output(): string;
  stop(): Promise<void>;
}

export function startPgbouncer(options: { targetUrl: string; settings?: string }): Promise<PgBouncer>;
