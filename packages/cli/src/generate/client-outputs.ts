import path from 'node:path';

/** The typed client's place in every backend project. */
export const clientPath = 'client/authstrap-client.ts';

export interface ClientOutputs {
  /** Where `authstrap generate` writes the client, relative to the backend folder: `clientPath` first. */
  paths: string[];
  /** Entries of `authstrap.clients` that cannot be used, each naming package.json and the entry. */
  problems: string[];
}

/**
 * Where the typed client goes, from the backend's package.json (parsed): `client/authstrap-client.ts`,
 * and a copy at each path of `"authstrap": { "clients": [...] }`, relative to the backend folder
 * (`../web/src/lib/authstrap-client.ts`), so that a frontend imports it from its own tree.
 * Pure: whether each copy's folder can be made is for the caller, who reads the disk.
 */
export function clientOutputs(packageJson: unknown): ClientOutputs {
  const settings = isObject(packageJson) ? packageJson.authstrap : undefined;
  const clients = isObject(settings) ? settings.clients : undefined;
  if (settings === undefined || clients === undefined) {
    const problems = settings === undefined || isObject(settings) ? [] : ['package.json: "authstrap" must be an object, e.g. { "clients": ["../web/src/lib/authstrap-client.ts"] }'];
    return { paths: [clientPath], problems };
  }
  if (!Array.isArray(clients)) {
    return { paths: [clientPath], problems: ['package.json: "authstrap.clients" must be a list of paths to .ts files, relative to the backend folder'] };
  }
  const paths = [clientPath];
  const problems: string[] = [];
  for (const entry of clients) {
    const refuse = (why: string) => problems.push(`package.json: the "authstrap.clients" entry ${JSON.stringify(entry)} ${why}`);
    if (typeof entry !== 'string' || entry.trim() === '') refuse('is not a path');
    else if (!entry.endsWith('.ts') || entry.endsWith('.d.ts')) refuse('is not a .ts file (the client is TypeScript source)');
    else if (path.isAbsolute(entry) || path.win32.isAbsolute(entry)) refuse('must be relative to the backend folder, e.g. "../web/src/lib/authstrap-client.ts"');
    else {
      const normalized = path.posix.normalize(entry.replace(/\\/g, '/'));
      if (!paths.includes(normalized)) paths.push(normalized);
    }
  }
  return { paths, problems };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
