import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * A validating proxy, as Stoplight Prism's proxy mode is one (docs/decisions.md says why not
 * Prism itself): every request goes on to the backend unchanged, and every answer comes back
 * unchanged after it has been checked against the OpenAPI document. A violation is an answer the
 * document does not describe: an operation it does not list, a status the operation does not
 * list, a media type it does not list, or a JSON body that fails the listed schema.
 */

type Json = Record<string, any>;

export interface Violation {
  request: string;
  status: number;
  problem: string;
}

export interface Exchange {
  method: string;
  /** The path template the request matched (`/Projects/{id}`), or the raw path when none did. */
  path: string;
  status: number;
}

export interface ValidatingProxy {
  url: string;
  violations: Violation[];
  exchanges: Exchange[];
  close(): Promise<void>;
}

const methods = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

/** Checks answers against `document`: `check` returns the problems of one answer (none: it conforms). */
export function responseChecker(document: Json) {
  // OpenAPI 3.1 schemas are JSON Schema 2020-12: ajv reads them as they are, refs into the document included.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats.default(ajv);
  ajv.addSchema(document, 'openapi.json');
  const compiled = new Map<string, ValidateFunction>();
  const schemaAt = (pointer: string) => {
    let validate = compiled.get(pointer);
    if (!validate) compiled.set(pointer, (validate = ajv.compile({ $ref: `openapi.json#${pointer}` })));
    return validate;
  };
  const pointerPart = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');

  // Literal paths before templated ones: /Users/consume-one is not /Users/{id}.
  const templates = Object.keys(document.paths ?? {})
    .map((template) => ({ template, pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`, 'i') }))
    .sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  const templateOf = (pathname: string) => {
    // Express routes ignore a trailing slash (/api/docs/ is /api/docs).
    const path = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
    return templates.find(({ pattern }) => pattern.test(path))?.template;
  };

  return {
    templateOf,
    check(method: string, pathname: string, status: number, contentType: string | undefined, body: string): string[] {
      const template = templateOf(pathname);
      const verb = method.toLowerCase();
      if (!template) return ['no path of the document matches'];
      const operation = document.paths[template][verb];
      if (!operation || !methods.has(verb)) return [`${method} is not an operation of ${template}`];
      const responses: Json = operation.responses ?? {};
      const key = [String(status), `${String(status)[0]}XX`, 'default'].find((candidate) => responses[candidate]);
      if (!key) return [`status ${status} is not listed (listed: ${Object.keys(responses).join(', ')})`];
      let pointer = `/paths/${pointerPart(template)}/${verb}/responses/${key}`;
      let response = responses[key];
      if (response.$ref) {
        pointer = response.$ref.slice(1);
        response = pointer.split('/').slice(1).reduce((node: Json, part: string) => node[part.replace(/~1/g, '/').replace(/~0/g, '~')], document);
      }
      const content: Json | undefined = response.content;
      if (!content) {
        // Nothing listed: a redirect's or a 204's answer; a JSON body would be an envelope nobody described.
        return body && contentType?.startsWith('application/json') ? [`a JSON body, where ${status} lists none`] : [];
      }
      if (!body && method !== 'HEAD') return [`no body, where ${status} lists ${Object.keys(content).join(', ')}`];
      const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
      const listed = Object.keys(content).find((candidate) => candidate === mediaType || candidate === '*/*' || (candidate.endsWith('/*') && mediaType.startsWith(candidate.slice(0, -1))));
      if (!listed) return [`media type ${mediaType || '(none)'} is not listed (listed: ${Object.keys(content).join(', ')})`];
      if (!mediaType.endsWith('json') || !content[listed].schema) return [];
      const validate = schemaAt(`${pointer}/content/${pointerPart(listed)}/schema`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        return ['the body is not JSON'];
      }
      return validate(parsed) ? [] : (validate.errors ?? []).slice(0, 5).map((error) => `body${error.instancePath} ${error.message}`);
    },
  };
}

/** Listens on a loopback port and forwards to `target`, checking each answer against `document`. */
export async function startValidatingProxy(target: string, document: Json): Promise<ValidatingProxy> {
  const checker = responseChecker(document);
  const upstream = new URL(target);
  const violations: Violation[] = [];
  const exchanges: Exchange[] = [];
  const server = http.createServer((req, res) => {
    const forwarded = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          const pathname = new URL(req.url ?? '/', 'http://proxy').pathname;
          const status = answer.statusCode ?? 0;
          const text = /json|text|javascript/.test(answer.headers['content-type'] ?? '') ? body.toString('utf8') : body.length > 0 ? '(binary)' : '';
          for (const problem of checker.check(req.method ?? 'GET', pathname, status, answer.headers['content-type'], text)) {
            violations.push({ request: `${req.method} ${req.url}`, status, problem });
          }
          exchanges.push({ method: req.method ?? 'GET', path: checker.templateOf(pathname) ?? pathname, status });
          res.writeHead(status, answer.headers);
          res.end(body);
        });
      },
    );
    forwarded.on('error', (error) => {
      res.writeHead(502);
      res.end(String(error));
    });
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    violations,
    exchanges,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
