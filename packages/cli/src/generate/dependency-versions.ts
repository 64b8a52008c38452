import { version } from '../version.js';

/**
 * The versions a generated backend depends on: one place to change them. Every major here
 * supports Node 20.19, 22 and 24 (`engines` of the project: ^20.19.0 || >=22.12.0).
 */
export const backendDependencies = {
  '@asteasolutions/zod-to-openapi': '^9.1.0',
  '@electric-sql/pglite': '^0.5.16',
  // Traces, only loaded when OTEL_* turns them on (src/observability/tracing.ts). The 2.x SDK and
  // the 0.223 exporters are the last to support Node 20 (3.x and 0.300 need Node 22); the SDK
  // accepts the API below 1.10.
  '@opentelemetry/api': '~1.9.0',
  '@opentelemetry/core': '^2.12.1',
  '@opentelemetry/exporter-trace-otlp-http': '~0.223.1',
  '@opentelemetry/exporter-trace-otlp-proto': '~0.223.1',
  '@opentelemetry/resources': '^2.12.1',
  '@opentelemetry/sdk-trace-base': '^2.12.1',
  // Single sign-on's SAML service provider (src/sso/saml.ts), loaded only when a SAML connection is
  // made or used. 5.1 has the fixes of CVE-2025-54419 and, through xml-crypto 6, CVE-2025-29774/29775.
  '@node-saml/node-saml': '^5.1.0',
  // Makes a SAML connection's self-signed SP certificate (Node reads certificates but cannot make
  // one). 1.14 loads its reflect-metadata polyfill itself; 2.x leaves that to the application.
  '@peculiar/x509': '~1.14.3',
  // The SAML algorithm policy and IdP metadata read XML before node-saml does; the parser node-saml
  // itself uses (0.8 has the fixes of its multiple-root and prototype advisories).
  '@xmldom/xmldom': '^0.8.10',
  bcrypt: '^6.0.0',
  cors: '^2.8.5',
  express: '^5.2.1',
  'express-rate-limit': '^8.7.0',
  helmet: '^8.1.0',
  // Mail over SMTP (src/mail/mailer.ts); without SMTP_URL, mail goes to a folder.
  nodemailer: '^8.0.9',
  // Single sign-on's OIDC relying party (src/sso/oidc.ts), loaded only when a connection is used.
  'openid-client': '^6.9.1',
  // 8.20 brings pg-pool's onConnect hook, which the timeline guard awaits before a connection is used (src/db/timelines.ts).
  pg: '^8.20.0',
  pino: '^10.1.0',
  // Prometheus metrics (src/observability/metrics.ts), served when METRICS_TOKEN is set.
  'prom-client': '^15.1.3',
  'rate-limit-redis': '^6.0.1',
  redis: '^5.9.0',
  'swagger-ui-express': '^5.0.1',
  zod: '^4.1.12',
};

export const backendDevDependencies = {
  // The CLI that wrote the project, for its `generate`, `verify` and `fix` scripts: pinned, so that
  // a regenerated project renders with the templates it was made with. When this version is not on
  // the registry (a checkout, a packed tarball), setup and add-auth link the CLI instead: see
  // setup/authstrap-dependency.ts.
  authstrap: version,
  '@types/bcrypt': '^6.0.0',
  '@types/cors': '^2.8.19',
  '@types/express': '^5.0.5',
  // The lowest supported Node's API, so that `tsc` refuses a call Node 20 lacks (docs/decisions.md).
  '@types/node': '^20.19.0',
  '@types/nodemailer': '^8.0.2',
  '@types/pg': '^8.15.6',
  '@types/swagger-ui-express': '^4.1.8',
  // `npm run dev` runs the TypeScript directly; production runs what `npm run build` compiled.
  tsx: '^4.20.6',
  typescript: '~5.9.3',
};
