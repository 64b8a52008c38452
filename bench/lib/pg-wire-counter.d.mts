// Types for pg-wire-counter.mjs, for the TypeScript tests that count round trips with it.
export interface WireSnapshot {
  totals: { Q: number; P: number; E: number; S: number };
  texts: Map<string, number>;
}

export interface WireCounter {
  port: number;
  snapshot(): WireSnapshot;
  close(): Promise<void>;
}

export function startWireCounter(options: { upstreamHost: string; upstreamPort: number }): Promise<WireCounter>;

export function perRequest(
  before: WireSnapshot,
  after: WireSnapshot,
  requests: number,
): { requests: number; statements: number; roundTrips: number; statementsPerRequest: number; roundTripsPerRequest: number; sql: { sql: string; perRequest: number }[] };
