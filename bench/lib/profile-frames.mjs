// How the profile readers (bench/profile-summary.mjs for CPU, bench/heap-summary.mjs for
// allocations) name a V8 call frame: by its source (package, example file or Node module), and
// which frames begin a layer of the example's pipeline.

/** `node_modules/.pnpm/pg@8/node_modules/pg/lib/x.js` -> `pg`; the example's `dist/x.js` stays a file. */
export function sourceOf({ url, functionName }) {
  if (!url) return `(${functionName || 'native'})`;
  const inPackage = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (inPackage) return inPackage[1];
  const inExample = /\/saas-backend\/(dist[^/]*\/.*)$/.exec(url);
  return inExample ? inExample[1] : url.replace(/^file:\/\/.*\//, '');
}

const helperModules = /\/dist[^/]*\/(db\/|http\/(list-query|list-fields|service-query|session-token|envelope|errors|validate)\.js$)/;

/**
 * A middleware or route handler: where one layer's work begins. Express's `next` counts as one,
 * so that a layer's figure is its own work and what it calls, not the layers after it.
 */
export function isLayer(frame) {
  const { url, functionName } = frame;
  if (/\/router\/index\.js$/.test(url)) return functionName === 'next';
  if (/express-rate-limit\/dist\//.test(url) || /body-parser\/lib\/types\//.test(url)) return true;
  return /\/saas-backend\/dist[^/]*\//.test(url) && !helperModules.test(url);
}

export const frameLabel = (frame) => `${sourceOf(frame)} ${frame.functionName || '(anonymous)'}:${frame.lineNumber + 1}`;

/** `map` as the `rows` largest entries, each divided by `requests`, with `unit`. */
export const perRequestTable = (map, rows, requests, unit, digits = 1) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, rows)
    .map(([key, amount]) => `${(amount / requests).toFixed(digits).padStart(8)} ${unit}  ${key}`)
    .join('\n');
