import { Node, SyntaxKind, type SourceFile } from 'ts-morph';
import { fail, pass, skip, warn, type Check, type FileChange } from './check.js';
import { generatedCollections, isBuiltin } from './collections.js';
import { parseSource, staleGenerated } from './source.js';

/**
 * An entity whose generated output type or create input lacks `id`: clients cannot address what
 * they read, and adapters cannot choose the ids of what they create. Read in every file generate
 * writes from the schema: the zod schemas in src/generated/ and the typed client (with its copies
 * in frontends). Repaired by re-rendering those files from authstrap.schema.ts, as generate does.
 */
export const idField: Check = {
  id: 'id-field',
  title: 'Every entity type has its id',
  examine(project) {
    if (!project.generatePlan) return warn(`cannot read the schema: ${project.schemaProblem ?? 'unknown problem'}`);
    if (project.generatePlan.problems.length) return warn(`authstrap generate cannot run: ${project.generatePlan.problems.join('; ')}`);
    const isClient = (path: string) => (project.clientPaths ?? []).includes(path);
    const lacking = (change: FileChange) => (isClient(change.path) ? clientTypesLackingId(change.before, change.after) : lacksIds(change.path, change.before) ? [''] : []);
    const broken = staleGenerated(project, (change) => lacking(change).length > 0, { withClient: true });
    if (broken.length === 0) return pass('the output and create types of every entity declare id, in src/generated and the typed client');
    const where = broken.map((change) => (isClient(change.path) ? `${change.path} (${lacking(change).join(', ')})` : change.path));
    return {
      ...fail(`${where.join(', ')} ${broken.length === 1 ? 'lacks' : 'lack'} id in the output or create type`),
      repair: { summary: `re-render ${broken.length} file${broken.length === 1 ? '' : 's'} from authstrap.schema.ts`, files: broken, sql: [] },
    };
  },
  probe: {
    needs: 'http',
    async run(context) {
      const document = await context.openApi();
      if (!document) return skip('the backend serves no OpenAPI document (/api/docs/openapi.json) to read its types from');
      // Records of every entity; the create bodies of your own entities with uuid ids (the
      // built-in ones' are invitations and sign-ups; numbered ids come from the database).
      const lacking = generatedCollections(document)
        .filter((collection) => !collection.parent)
        .flatMap((collection) => {
          const id = collection.record?.properties?.id;
          const callerChoosesId = id?.type === 'string' && !isBuiltin(collection);
          return [
            ...(collection.record && !id ? [`${collection.entity} records`] : []),
            ...(callerChoosesId && collection.createBody && !collection.createBody.properties?.id ? [`the body of POST ${collection.path}`] : []),
          ];
        });
      if (lacking.length) return fail(`the running backend has no id in ${lacking.join(', ')}`);
      return pass("the running backend's records and create bodies have id");
    },
  },
};

/**
 * A generated `<entity>.schema.ts` whose output schema or create input, written as an object
 * literal (`z.object({ ... })`), has no `id` property.
 */
export function lacksIds(file: string, source: string): boolean {
  if (!file.endsWith('.schema.ts')) return false;
  const objects = parseSource(file, source)
    .getVariableDeclarations()
    .filter((declaration) => /(Schema|CreateInput)$/.test(declaration.getName()))
    .flatMap((declaration) => declaration.getInitializer()?.getDescendantsOfKind(SyntaxKind.CallExpression) ?? [])
    .filter((call) => {
      const callee = call.getExpression();
      return Node.isPropertyAccessExpression(callee) && ['object', 'strictObject'].includes(callee.getName()) && callee.getExpression().getText() === 'z';
    })
    .flatMap((call) => call.getArguments().filter(Node.isObjectLiteralExpression));
  return objects.length < 2 || objects.some((object) => !object.getProperty('id'));
}

/**
 * The typed client's types (interfaces and object type aliases) that declare `id` as generate
 * writes them (`generated`) but not in the file on disk (`onDisk`; none when it is missing). A
 * type gone altogether is not an id problem.
 */
export function clientTypesLackingId(onDisk: string, generated: string): string[] {
  if (!onDisk) return [];
  const present = objectTypes(parseSource('client/authstrap-client.ts', onDisk));
  const planned = objectTypes(parseSource('client/authstrap-client.generated.ts', generated));
  return [...planned].filter(([name, hasId]) => hasId && present.get(name) === false).map(([name]) => name);
}

/** Each top-level interface or object type alias, by name: whether it declares `id`. */
function objectTypes(source: SourceFile): Map<string, boolean> {
  const types = new Map<string, boolean>();
  for (const declaration of source.getInterfaces()) types.set(declaration.getName(), declaration.getProperty('id') !== undefined);
  for (const alias of source.getTypeAliases()) {
    const literal = alias.getTypeNode();
    if (literal && Node.isTypeLiteral(literal)) types.set(alias.getName(), literal.getProperty('id') !== undefined);
  }
  return types;
}
