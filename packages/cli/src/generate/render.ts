import Handlebars from 'handlebars';
import type { Schema } from '../schema/types.js';
import { clientPath } from './client-outputs.js';
import { clientView } from './client-view.js';
import { version } from '../version.js';
import { backendDependencies, backendDevDependencies } from './dependency-versions.js';
import type { Templates } from './templates.js';
import { projectView } from './view-model.js';

/**
 * `generated` files are rewritten by every `authstrap generate`; `owned` files are written only
 * when missing and then belong to the user; `migration` files are written once and never changed.
 */
export type Ownership = 'generated' | 'owned' | 'migration';

export interface PlannedFile {
  path: string;
  contents: string;
  ownership: Ownership;
  /**
   * An owned file's template, as this version of authstrap has it: what an upgrade compares
   * (generate/apply.ts). `rendered` when the contents also depend on the project (its name, port,
   * schema), so that they differ between projects for the same template.
   */
  template?: {
    source: string;
    rendered: boolean;
    /** What a rendered template was rendered with: an older version's source (the merge base) is rendered with it too. */
    data?: object;
  };
}

export interface RenderOptions {
  /** The npm package name of the project, used only for files created once. */
  packageName: string;
  /** The port in the project's .env, named by its README (default 3000, the server's own default). */
  backendPort?: number;
  /** How package.json asks for authstrap itself (default: the version of this CLI). */
  authstrapDependency?: string;
  /** Where the typed client goes, relative to the project (default: `client/authstrap-client.ts` alone). */
  clientPaths?: string[];
}

const handlebars = Handlebars.create();
handlebars.registerHelper('eq', (a: unknown, b: unknown) => a === b);
handlebars.registerHelper('or', (a: unknown, b: unknown) => a || b);

const compiled = new Map<string, Handlebars.TemplateDelegate>();
/** A Handlebars template (with the `eq` and `or` helpers) rendered with `data`; compiled once per source. */
export function render(source: string, data: object): string {
  let template = compiled.get(source);
  if (!template) {
    template = handlebars.compile(source, { noEscape: true });
    compiled.set(source, template);
  }
  return template(data);
}

/** Template file name -> project file name: `_gitignore` -> `.gitignore`, `x.ts.hbs` -> `x.ts`. */
export function outputPath(templatePath: string): string {
  return templatePath.replace(/(^|\/)_gitignore$/, '$1.gitignore').replace(/\.hbs$/, '');
}

export const renderIfTemplate = (templatePath: string, source: string, data: object) =>
  templatePath.endsWith('.hbs') ? render(source, data) : source;

/** Sorts by code unit, not `localeCompare`: the machine's locale must not change the bytes. */
export const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export const sortedEntries = (versions: Record<string, string>) =>
  Object.entries(versions)
    .sort(([a], [b]) => byCodeUnit(a, b))
    .map(([name, version]) => ({ name, version }));

/** Every file of a project except migrations, from the schema alone: same schema, same bytes. */
export function renderProject(schema: Schema, templates: Templates, options: RenderOptions): PlannedFile[] {
  const view = projectView(schema);
  const files: PlannedFile[] = [];

  const projectData = {
    ...view,
    packageName: options.packageName,
    backendPort: options.backendPort ?? 3000,
    // The README says which authstrap first wrote the project (authstrap.files.json: which one last generated it).
    authstrapVersion: version,
    dependencies: sortedEntries(backendDependencies),
    devDependencies: sortedEntries({ ...backendDevDependencies, ...(options.authstrapDependency ? { authstrap: options.authstrapDependency } : {}) }),
  };
  for (const [templatePath, source] of templates.project) {
    const rendered = templatePath.endsWith('.hbs');
    files.push({
      path: outputPath(templatePath),
      contents: renderIfTemplate(templatePath, source, projectData),
      ownership: 'owned',
      template: { source, rendered, ...(rendered ? { data: projectData } : {}) },
    });
  }

  for (const [templatePath, source] of templates.generated) {
    files.push({ path: `src/generated/${outputPath(templatePath)}`, contents: renderIfTemplate(templatePath, source, view), ownership: 'generated' });
  }
  const client = templates.client.get('authstrap-client.ts.hbs');
  if (client !== undefined) {
    const contents = render(client, clientView(schema));
    for (const path of options.clientPaths ?? [clientPath]) files.push({ path, contents, ownership: 'generated' });
  }
  for (const entity of view.entities) {
    for (const [templatePath, source] of templates.entity) {
      // An entity only the trusted server uses (verification) is served by service-api.ts alone.
      if (templatePath === 'router.ts.hbs' && entity.serviceOnly) continue;
      const fileName = `${entity.fileBase}.${outputPath(templatePath)}`;
      // Built-in entities with rules of their own (who sees which users, roles) have their own router.
      const special = entity.builtin && view.auth ? templates.builtin.get(fileName) : undefined;
      const contents = special ?? render(source, entity);
      files.push({ path: `src/generated/${entity.folder}/${fileName}`, contents, ownership: 'generated' });
    }
  }
  return files.sort((a, b) => byCodeUnit(a.path, b.path));
}
