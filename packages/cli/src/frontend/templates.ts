import path from 'node:path';
import { readTree, templatesDir } from '../generate/templates.js';

/** The frontend's template files, read once from disk so that planning itself is pure. */
export interface FrontendTemplates {
  /** A new Next.js app, by path in the app (`package.json.hbs`, `src/app/layout.tsx.hbs`). */
  app: Map<string, string>;
  /** The files that connect any Next.js app to the backend, relative to its source root (`lib/auth.ts`). */
  auth: Map<string, string>;
}

export function loadFrontendTemplates(dir = templatesDir()): FrontendTemplates {
  const frontend = path.join(dir, 'frontend');
  return { app: readTree(path.join(frontend, 'app')), auth: readTree(path.join(frontend, 'auth')) };
}
