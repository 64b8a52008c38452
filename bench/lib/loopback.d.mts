// Types for loopback.mjs, for the TypeScript tests.
export function freePort(): Promise<number>;
export function accepts(port: number): Promise<boolean>;
