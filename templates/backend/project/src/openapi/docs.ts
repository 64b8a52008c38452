import { Router, type RequestHandler } from 'express';
import swaggerUi from 'swagger-ui-express';

/** A file name of Swagger UI's bundle (`swagger-ui.css`, `swagger-ui-init.js`): no folders, no `..`, not its package.json. */
const assetName = /^\/(?!\.|package\.json$)[\w.-]+$/;

/**
 * `/api/docs/openapi.json` (the document) and `/api/docs` (Swagger UI). The UI's scripts and
 * styles are served from this backend, so the page works offline and under a strict CSP. Only
 * those paths answer here: any other path under /api/docs (a `..`, a broken escape, a file that
 * does not exist) falls through to the API's 404 with the error envelope.
 */
export function docsRouter(document: object): Router {
  const router = Router();
  router.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  const assets = swaggerUi.serveFiles(document) as RequestHandler[];
  const page = swaggerUi.setup(document, { swaggerOptions: { url: '/api/docs/openapi.json', validatorUrl: null } });
  // The page loads its files relative to itself (`./swagger-ui.css`), so it lives at `/api/docs/`.
  router.get('/', (req, res, next) => (req.originalUrl.split('?')[0]!.endsWith('/') ? next() : res.redirect(301, `${req.baseUrl}/`)), page);
  router.get(assetName, ...assets);
  return router;
}
