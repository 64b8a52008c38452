// For authstrap developers: re-creates examples/saas-backend from its schema with the current
// templates, as a fresh project would get them. Keeps the schema and the hand-written tests.
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot, run } from './bootstrap.mjs';

const example = path.join(repoRoot, 'examples/saas-backend');
const keep = new Set(['authstrap.schema.ts', 'test', 'vitest.config.ts', 'node_modules', '.data', '.env']);
for (const entry of fs.readdirSync(example)) {
  if (!keep.has(entry)) fs.rmSync(path.join(example, entry), { recursive: true, force: true });
}
run('node packages/cli/dist/cli.js generate examples/saas-backend');
