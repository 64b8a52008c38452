import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The template files, read once from disk so that rendering itself is pure. */
export interface Templates {
  /** Files of a new project, by their path in the project (`src/app.ts`, `package.json.hbs`). */
  project: Map<string, string>;
  /** Files of `src/generated/` that are not per entity. */
  generated: Map<string, string>;
  /** Per-entity templates by name: `schema.ts.hbs`, `repository.ts.hbs`, `router.ts.hbs`. */
  entity: Map<string, string>;
  /** Routers of built-in entities whose rules differ from plain CRUD, by file name (`user.router.ts`). */
  builtin: Map<string, string>;
  /** The typed client a frontend imports (`authstrap-client.ts.hbs`), from templates/client. */
  client: Map<string, string>;
  /**
   * Owned files' templates of released versions, by the SHA-256 of their
   * source (templates/released-owned.json): the merge base for a project that kept none.
   */
  released?: Map<string, string>;
}

/** The folder holding `backend/` and `client/`: shipped inside the package, or at the root of this repository. */
export function templatesDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.resolve(here, '../../templates'), path.resolve(here, '../../../../templates')];
  const found = candidates.find((candidate) => fs.existsSync(path.join(candidate, 'backend')));
  if (!found) throw new Error(`authstrap's templates are missing (looked in ${candidates.join(', ')}); reinstall authstrap`);
  return found;
}

export function readTree(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else files.set(path.relative(root, full).split(path.sep).join('/'), fs.readFileSync(full, 'utf8'));
    }
  };
  walk(root);
  return files;
}

export function loadTemplates(dir = templatesDir()): Templates {
  const backend = path.join(dir, 'backend');
  const generated = readTree(path.join(backend, 'generated'));
  const entity = new Map<string, string>();
  const builtin = new Map<string, string>();
  for (const [name, source] of generated) {
    for (const [folder, target] of [['entity/', entity], ['builtin/', builtin]] as const) {
      if (name.startsWith(folder)) {
        target.set(name.slice(folder.length), source);
        generated.delete(name);
      }
    }
  }
  return { project: readTree(path.join(backend, 'project')), generated, entity, builtin, client: readTree(path.join(dir, 'client')), released: readReleased(dir) };
}

function readReleased(dir: string): Map<string, string> {
  const file = path.join(dir, 'released-owned.json');
  if (!fs.existsSync(file)) return new Map();
  const { templates } = JSON.parse(fs.readFileSync(file, 'utf8')) as { templates: Record<string, { source: string }> };
  return new Map(Object.entries(templates).map(([sha, entry]) => [sha, entry.source]));
}
