import { Node, Project, type ObjectLiteralExpression } from 'ts-morph';
import { builtinEntityNames } from '../schema/builtin.js';
import { collectionPath, pascalCase, pluralOf } from '../schema/naming.js';
import { SchemaError, schemaObjectLiteral } from '../schema/read-literal.js';

/**
 * The schema-file part of `authstrap add-auth`: turn `auth` on and rename every entity whose
 * name or REST path clashes with an auth entity (`Account`, `users`, `Sessions`, ...). A renamed
 * entity keeps its table, so no data moves; every `references` to it follows. The edits are
 * computed from the syntax tree and applied as exact text replacements, so the file's comments
 * and formatting stay as they were. Pure: source text in, source text out.
 */

export interface EntityRename {
  from: string;
  to: string;
  /** The table the entity keeps. */
  table: string;
}

export interface SchemaEditPlan {
  before: string;
  after: string;
  authWasOn: boolean;
  renames: EntityRename[];
  /** Clashes no rename can solve (an existing table named exactly like an auth table). */
  problems: string[];
}

/** Every spelling of a built-in entity's name, plural and path, lowercased: names and paths match case-insensitively. */
const reservedSpellings = new Set(
  builtinEntityNames.flatMap((name) => [name, pluralOf(name), collectionPath(name).slice(1)]).map((spelling) => spelling.toLowerCase()),
);
const clashes = (spelling: string | undefined) => spelling !== undefined && reservedSpellings.has(spelling.toLowerCase());

/** `users` -> `user`, `Sessions` -> `Session`: enough for names that clash with ours. */
const singular = (name: string) => name.replace(/ies$/i, 'y').replace(/s$/i, '');

const unquote = (name: string) => name.replace(/^['"]|['"]$/g, '');

function stringProperty(object: ObjectLiteralExpression, key: string): string | undefined {
  const property = object.getProperty(key);
  const value = property && Node.isPropertyAssignment(property) ? property.getInitializer() : undefined;
  return value && Node.isStringLiteral(value) ? value.getLiteralValue() : undefined;
}

interface TextEdit {
  start: number;
  end: number;
  text: string;
}

export function planSchemaEdit(source: string, options: { renames?: Record<string, string> } = {}): SchemaEditPlan {
  const file = new Project({ useInMemoryFileSystem: true }).createSourceFile('authstrap.schema.ts', source);
  const schema = schemaObjectLiteral(file);
  const entitiesProperty = schema?.getProperty('entities');
  const entities = entitiesProperty && Node.isPropertyAssignment(entitiesProperty) ? entitiesProperty.getInitializer() : undefined;
  if (!schema || !entities || !Node.isObjectLiteralExpression(entities)) {
    throw new SchemaError(['authstrap.schema.ts: expected `export default { entities: { ... } }`']);
  }

  const edits: TextEdit[] = [];
  const problems: string[] = [];
  const renames: EntityRename[] = [];
  const builtinTables = new Set(builtinEntityNames);
  const taken = new Set(
    entities.getProperties().flatMap((property) => (Node.isPropertyAssignment(property) ? [unquote(property.getName()).toLowerCase()] : [])),
  );

  for (const property of entities.getProperties()) {
    if (!Node.isPropertyAssignment(property)) continue;
    const name = unquote(property.getName());
    const definition = property.getInitializer();
    if (!definition || !Node.isObjectLiteralExpression(definition)) continue;
    const table = stringProperty(definition, 'table') ?? name;
    // PostgreSQL tables are quoted, so only the exact name is taken ("users" is not "User").
    if (builtinTables.has(table)) {
      problems.push(`entity "${name}" uses the table "${table}", which the auth entities need; rename that table first`);
      continue;
    }
    const plural = stringProperty(definition, 'plural');
    if (![name, plural, collectionPath(name, plural ?? pluralOf(name)).slice(1)].some(clashes)) continue;

    const wanted = options.renames?.[name] ?? `App${pascalCase(singular(name))}`;
    let to = wanted;
    for (let n = 2; taken.has(to.toLowerCase()) || clashes(to); n += 1) to = `${wanted}${n}`;
    taken.add(to.toLowerCase());
    edits.push({ start: property.getNameNode().getStart(), end: property.getNameNode().getEnd(), text: to });
    const tableProperty = definition.getProperty('table');
    if (!tableProperty) {
      // `table: '<old>'` goes in front of the first property, indented like it.
      const first = definition.getProperties()[0];
      if (first) {
        const indent = /[ \t]*$/.exec(source.slice(0, first.getStart()))![0];
        const sameLine = !source.slice(definition.getStart(), first.getStart()).includes('\n');
        edits.push({ start: first.getStart(), end: first.getStart(), text: `table: '${table}',${sameLine ? ' ' : `\n${indent}`}` });
      } else {
        edits.push({ start: definition.getStart() + 1, end: definition.getStart() + 1, text: ` table: '${table}' ` });
      }
    }
    const pluralProperty = definition.getProperty('plural');
    if (pluralProperty && clashes(plural)) edits.push({ start: pluralProperty.getStart(), end: pluralProperty.getEnd() + (source[pluralProperty.getEnd()] === ',' ? 1 : 0), text: '' });
    renames.push({ from: name, to, table });
  }

  // References follow the renamed entities, wherever they are.
  for (const node of entities.getDescendants()) {
    if (!Node.isPropertyAssignment(node) || node.getName() !== 'references') continue;
    const value = node.getInitializer();
    const rename = value && Node.isStringLiteral(value) ? renames.find((candidate) => candidate.from === value.getLiteralValue()) : undefined;
    if (rename) edits.push({ start: value!.getStart(), end: value!.getEnd(), text: `'${rename.to}'` });
  }

  // Only `auth: false` turns auth off; a schema without the key has it on already.
  const auth = schema.getProperty('auth');
  const authOff = auth && Node.isPropertyAssignment(auth) ? auth.getInitializer() : undefined;
  const authWasOn = authOff?.getText() !== 'false';
  if (!authWasOn) edits.push({ start: authOff!.getStart(), end: authOff!.getEnd(), text: 'true' });

  let after = source;
  // Back to front; at one position the replacement goes before the insertion, which it would swallow.
  for (const edit of edits.sort((a, b) => b.start - a.start || b.end - a.end)) after = after.slice(0, edit.start) + edit.text + after.slice(edit.end);
  return { before: source, after, authWasOn, renames, problems };
}
