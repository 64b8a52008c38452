import { randomBytes } from 'node:crypto';
import type { DatabaseProbe } from '../verify/database.js';
import type { HttpClient, Probe } from '../verify/http.js';

/** A user `verify` signed up, with the organization sign-up gave them. */
export interface Person {
  id: string;
  email: string;
  password: string;
  token: string;
  organizationId: string;
}

/** Where the service key came from, for messages: the flag or the variable that gave it. */
export type ServiceKeySource = '--service-key' | 'SERVICE_API_KEY in the environment' | 'SERVICE_API_KEY in .env';

/** What the probes of one `verify` run share: the backend, its database, and what they made. */
export interface ProbeContext {
  http: HttpClient;
  db?: DatabaseProbe;
  runId: string;
  people: { alice?: Person; bob?: Person };
  /** Everything created, for the clean-up. */
  created: { userIds: string[]; organizationIds: string[] };
  /** The backend's NODE_ENV, when known (flags, environment, .env): production's checks are stricter. */
  nodeEnv?: string;
  /** SERVICE_API_KEY, when known: what a Better Auth adapter signs in to the backend with. */
  serviceKey?: { value: string; source: ServiceKeySource };
  /** The backend's OpenAPI document (fetched once), or undefined when it does not serve one. */
  openApi(): Promise<OpenApiDocument | undefined>;
}

export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, any> };
}

export function probeContext(http: HttpClient, serviceKey: ProbeContext['serviceKey'], nodeEnv?: string): ProbeContext {
  let document: Promise<OpenApiDocument | undefined> | undefined;
  return {
    http,
    serviceKey,
    nodeEnv,
    runId: randomBytes(4).toString('hex'),
    people: {},
    created: { userIds: [], organizationIds: [] },
    openApi() {
      document ??= http('GET', '/api/docs/openapi.json', { trusted: true }).then((response) =>
        response.status === 200 && typeof response.body?.paths === 'object' ? (response.body as OpenApiDocument) : undefined,
      );
      return document;
    },
  };
}

/** A response as a message names it: its status and the error's message. */
export const describe = (probe: Probe) => `${probe.status}${probe.body?.error?.message ? ` ${probe.body.error.message}` : ''}`;
