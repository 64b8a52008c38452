#!/usr/bin/env node
// Keeps the owned files' templates of a released authstrap (templates/released-owned.json), so
// that `authstrap generate` can merge an upgrade into a project written by that release even when
// the project kept no base of its own (.authstrap-base/ began after 0.2.0). The release script
// runs it for the release before the one it makes (docs/releasing.md):
//
//   node scripts/record-released-templates.mjs <version> <git ref of that release>
//   node scripts/record-released-templates.mjs 0.2.0 e1225c9
//
// Every template of that release is kept, once however many releases share it, by the SHA-256 that
// authstrap.files.json records as each file's "template": a template changed later in this
// version's development still finds its base.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const projectTemplates = 'templates/backend/project';
const historyFile = path.join(root, 'templates/released-owned.json');
const [releasedVersion, ref] = process.argv.slice(2);
if (!releasedVersion || !ref) {
  console.error('usage: node scripts/record-released-templates.mjs <version> <git ref of that release>');
  process.exit(2);
}

const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
const history = fs.existsSync(historyFile) ? JSON.parse(fs.readFileSync(historyFile, 'utf8')) : { about: '', templates: {} };
history.about =
  "Owned files' templates of released versions of authstrap, by the SHA-256 of their source " +
  '(what authstrap.files.json records as "template"): the merge base of an upgrade for a project that kept none. Written by scripts/record-released-templates.mjs.';

let added = 0;
for (const file of git('ls-tree', '-r', '--name-only', ref, projectTemplates).split('\n').filter(Boolean)) {
  const source = git('show', `${ref}:${file}`);
  const key = sha256(source);
  const relative = file.slice(projectTemplates.length + 1);
  const entry = (history.templates[key] ??= { path: relative, versions: [], source });
  if (!entry.versions.includes(releasedVersion)) {
    entry.versions.push(releasedVersion);
    added++;
  }
}
history.templates = Object.fromEntries(Object.entries(history.templates).sort(([, a], [, b]) => a.path.localeCompare(b.path)));
fs.writeFileSync(historyFile, `${JSON.stringify(history, null, 2)}\n`);
console.log(`${path.relative(root, historyFile)}: ${added} template${added === 1 ? '' : 's'} of authstrap ${releasedVersion} (${ref}) recorded`);
