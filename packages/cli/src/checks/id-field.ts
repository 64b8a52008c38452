import { Node, SyntaxKind } from 'ts-morph';
import { fail, pass, skip, warn, type Check } from './check.js';
import { generatedCollections, isBuiltin } from './collections.js';
import { parseSource, staleGenerated } from './source.js';

/**
 * An entity whose generated output type or create input lacks `id`: clients cannot address what
 * they read, and adapters cannot choose the ids of what they create. Repaired by re-rendering
 * the schema file from authstrap.schema.ts.
 */
export const idField: Check = {
  id: 'id-field',
  title: 'Every entity type has its id',
  examine(project) {
    if (!project.generatePlan) return warn(`cannot read the schema: ${project.schemaProblem ?? 'unknown problem'}`);
    if (project.generatePlan.problems.length) return warn(`authstrap generate cannot run: ${project.generatePlan.problems.join('; ')}`);
    const broken = staleGenerated(project, (file, onDisk) => lacksIds(file, onDisk));
    if (broken.length === 0) return pass('the output and create types of every entity declare id');
    return {
      ...fail(`${broken.map((change) => change.path).join(', ')} ${broken.length === 1 ? 'lacks' : 'lack'} id in the output or create type`),
      repair: { summary: `re-render ${broken.length} schema file${broken.length === 1 ? '' : 's'} from authstrap.schema.ts`, files: broken, sql: [] },
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
