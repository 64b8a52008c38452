// Types of with-node.mjs, for the tests that import it.
export function parseArguments(args: string[]): { major: number; command: string[] };
export function nodePackageName(platform?: string, arch?: string): string;
export function nodeLocation(major: number, root?: string, platform?: string): { prefix: string; binDir: string; node: string };
