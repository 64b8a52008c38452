import { Router } from 'express';
import swaggerUi from 'swagger-ui-express';

/**
 * `/api/docs/openapi.json` (the document) and `/api/docs` (Swagger UI). The UI's scripts and
 * styles are served from this backend, so the page works offline and under a strict CSP.
 */
export function docsRouter(document: object): Router {
  const router = Router();
  router.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  router.use(
    '/',
    swaggerUi.serveFiles(document),
    swaggerUi.setup(document, { swaggerOptions: { url: '/api/docs/openapi.json', validatorUrl: null } }),
  );
  return router;
}
