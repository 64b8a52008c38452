// JavaScript per route of a built Next.js app: `node bench/route-js.mjs <app dir>` after `next build`.
// Next 16 no longer prints sizes in `next build`'s route table, so this reads what the build wrote:
// for each App Router page, the root chunks every page loads (build-manifest.json) and the chunks of
// its layouts and page (its client reference manifest), each counted once, raw and gzipped.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import zlib from 'node:zlib';

const appDir = path.resolve(process.argv[2] ?? '.');
const next = path.join(appDir, '.next');
const serverApp = path.join(next, 'server/app');

function manifests(dir) {
  return fs.readdirSync(dir, { recursive: true }).filter((file) => String(file).endsWith('page_client-reference-manifest.js')).map(String);
}

const rows = [];
for (const file of manifests(serverApp)) {
  const context = { globalThis: {} };
  context.globalThis = context;
  vm.runInNewContext(fs.readFileSync(path.join(serverApp, file), 'utf8'), context);
  const [[page, manifest]] = Object.entries(context.__RSC_MANIFEST);
  if (page.startsWith('/_')) continue;
  const build = JSON.parse(fs.readFileSync(path.join(serverApp, path.dirname(file), 'page/build-manifest.json'), 'utf8'));
  const chunks = new Set(build.rootMainFiles);
  for (const [entry, files] of Object.entries(manifest.entryJSFiles)) {
    if (entry.includes('/src/app/') || entry.includes('[project]/app/')) for (const chunk of files) chunks.add(chunk);
  }
  let raw = 0;
  let gzip = 0;
  for (const chunk of chunks) {
    const bytes = fs.readFileSync(path.join(next, chunk));
    raw += bytes.length;
    gzip += zlib.gzipSync(bytes).length;
  }
  rows.push({ route: page.replace(/\/page$/, '') || '/', raw, gzip });
}
rows.sort((a, b) => a.route.localeCompare(b.route));
const kB = (bytes) => (bytes / 1024).toFixed(1);
console.log('| route | JS (kB) | gzipped (kB) |\n|---|---:|---:|');
for (const row of rows) console.log(`| ${row.route} | ${kB(row.raw)} | ${kB(row.gzip)} |`);
