import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Router, type RequestHandler } from 'express';
import swaggerUi from 'swagger-ui-express';
import { z } from 'zod';

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

/**
 * The routes that are not the API's own, in the document: the probes (app.ts) and the docs
 * (above). Nobody signs in to them; the docs count against the generous data limit, the probes
 * against none.
 */
export function registerProbeAndDocsRoutes(registry: OpenAPIRegistry): void {
  const open: Record<string, string[]>[] = [];
  const envelope = (data: z.ZodType) => ({ 'application/json': { schema: z.object({ success: z.literal(true), data }) } });
  const tags = ['probes and docs'];
  registry.registerPath({
    method: 'get', path: '/health', operationId: 'getHealth', tags, security: open,
    summary: 'Liveness: the process is up (never rate limited; the database is not asked)',
    responses: { 200: { description: 'Up', content: envelope(z.object({ status: z.literal('ok') })) } },
  });
  registry.registerPath({
    method: 'get', path: '/ready', operationId: 'getReadiness', tags, security: open,
    summary: 'Readiness: the database answers (never rate limited); 503 while it does not, or while the backend drains before it stops',
    responses: {
      200: { description: 'Ready', content: envelope(z.object({ status: z.literal('ready'), database: z.enum(['postgres', 'embedded']) })) },
      503: { description: 'SERVICE_UNAVAILABLE: not ready (the database unreachable or a standby that takes no writes, or the backend draining): send traffic elsewhere; Retry-After says when to ask again' },
    },
  });
  registry.registerPath({
    method: 'get', path: '/api/docs/openapi.json', operationId: 'getOpenApiDocument', tags, security: open,
    summary: 'This document (OpenAPI 3.1)',
    responses: { 200: { description: 'The document', content: { 'application/json': { schema: z.object({ openapi: z.string(), info: z.object({ title: z.string(), version: z.string() }).loose(), paths: z.record(z.string(), z.unknown()) }).loose() } } } },
  });
  registry.registerPath({
    method: 'get', path: '/api/docs', operationId: 'getDocsPage', tags, security: open,
    summary: 'The interactive docs page (Swagger UI): /api/docs redirects to /api/docs/, which serves the page',
    responses: {
      200: { description: 'The page (at /api/docs/)', content: { 'text/html': { schema: z.string() } } },
      301: { description: 'To /api/docs/, where the page finds its files', headers: { Location: { description: '/api/docs/', schema: { type: 'string' } } } },
    },
  });
  registry.registerPath({
    method: 'get', path: '/api/docs/{file}', operationId: 'getDocsAsset', tags, security: open,
    summary: "A file of the docs page (Swagger UI's scripts, styles and icons), served from this backend",
    request: { params: z.object({ file: z.string().meta({ description: 'swagger-ui.css, swagger-ui-bundle.js, swagger-ui-init.js, ...' }) }) },
    responses: { 200: { description: 'The file', content: { 'text/css': { schema: z.string() }, 'application/javascript': { schema: z.string() }, 'image/png': { schema: z.string() } } } },
  });
}
