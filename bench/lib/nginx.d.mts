// Types for nginx.mjs, for the TypeScript tests.
export const nginxBinary: string | undefined;
export function siteFromDeployDocs(instancePorts: number[], listenPort: number): string;

export interface Nginx {
  url: string;
  /** One line per request: `<status> <upstream addresses> <upstream statuses> <method> <uri>`. */
  accessLog(): string;
  /** What nginx logged at warn and above (upstream errors among them). */
  errorLog(): string;
  stop(): Promise<void>;
}

export function startNginx(site: string, listenPort: number): Promise<Nginx>;
