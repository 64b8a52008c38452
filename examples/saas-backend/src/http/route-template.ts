import type { Express, Request } from 'express';

/** The label of a request that no route answered (a 404, or refused before routing: a 401 of a guard, a 429). */
export const unmatchedRoute = '(unmatched)';

/**
 * Which route answered a request, as its template (`/Projects/:projectId/Tasks/:id`, never the ids
 * themselves): the `route` label of the metrics and the name of a request's span. Worked out once,
 * by walking the app's routers after they are mounted, so that a request costs one lookup of the
 * route Express matched. Express keeps a mount's path as it was written in its router's layers
 * (`rawPath`, router 2.3+, which Express 5.1+ installs); a mount whose path is not a plain string
 * contributes nothing to the template.
 */
export function routeTemplates(app: Express): (req: Request) => string {
  const templates = new WeakMap<object, string>();
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      const path = typeof layer.rawPath === 'string' ? layer.rawPath : '';
      if (layer.route) {
        // A route matched by a regular expression (the docs page's assets) is its mount's `*`.
        const template = joinPaths(prefix, typeof layer.route.path === 'string' ? layer.route.path : '*');
        if (!templates.has(layer.route)) templates.set(layer.route, template);
      } else if (Array.isArray(layer.handle?.stack)) {
        walk(layer.handle.stack, joinPaths(prefix, path));
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  return (req) => (req.route ? (templates.get(req.route) ?? unmatchedRoute) : unmatchedRoute);
}

/** What this module reads of Express's router: a layer is a route, a mounted router (its `stack`), or a middleware. */
interface Layer {
  rawPath?: unknown;
  route?: { path: unknown };
  handle?: { stack?: Layer[] };
}

function joinPaths(prefix: string, path: string): string {
  const joined = `${prefix}/${path}`.replace(/\/+/g, '/');
  return joined.length > 1 ? joined.replace(/\/$/, '') : joined;
}
