import { Node, Project, SyntaxKind, ts, type Expression, type SourceFile } from 'ts-morph';

/** A problem with the schema file, pointing at where it is. */
export class SchemaError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'SchemaError';
  }
}

/** A place in the schema file, 1-based as editors show it. */
export interface SourceLocation {
  line: number;
  column: number;
}

/** Where the property at a path of keys (`['entities', 'Project', 'fields', 'name']`) is written. */
export type Locate = (path: string[]) => SourceLocation | undefined;

export interface SchemaSource {
  value: unknown;
  locate: Locate;
}

const locationKey = (path: string[]) => JSON.stringify(path);
/** Enough to find a missing comma; later errors are mostly the parser recovering from the first. */
const maxSyntaxErrors = 3;

/**
 * Reads the default export of a schema file as plain data, without running it: only object and
 * array literals, strings, numbers, booleans and null are allowed, so that a schema can be read
 * (and later edited by ts-morph) safely and exactly. A file that does not parse is refused with
 * the compiler's messages: the parser would otherwise recover and hand back a different schema.
 */
export function readSchemaSource(filePath: string, sourceText?: string): SchemaSource {
  // Only the syntax matters here: no lib files, no imports resolved (they may not be installed).
  const project = new Project({ useInMemoryFileSystem: sourceText !== undefined, compilerOptions: { noLib: true }, skipFileDependencyResolution: true });
  const file =
    sourceText === undefined
      ? project.addSourceFileAtPath(filePath)
      : project.createSourceFile(filePath, sourceText, { overwrite: true });
  const syntaxErrors = project.getProgram().getSyntacticDiagnostics(file);
  if (syntaxErrors.length > 0) {
    throw new SchemaError(
      syntaxErrors.slice(0, maxSyntaxErrors).map((diagnostic) => {
        const { line, column } = file.getLineAndColumnAtPos(diagnostic.getStart() ?? 0);
        return `${file.getBaseName()}:${line}:${column}: ${ts.flattenDiagnosticMessageText(diagnostic.compilerObject.messageText, ' ')}`;
      }),
    );
  }
  const exported = defaultExportExpression(file);
  if (!exported) {
    throw new SchemaError([
      `${file.getBaseName()}: no \`export default { ... }\` found; the schema file must export its object literal as default`,
    ]);
  }
  const locations = new Map<string, SourceLocation>();
  const value = toValue(unwrapExport(exported, file), { fileName: file.getBaseName(), path: [], locations });
  return { value, locate: (path) => locations.get(locationKey(path)) };
}

/** The data of a schema file (see readSchemaSource). */
export function readSchemaLiteral(filePath: string, sourceText?: string): unknown {
  return readSchemaSource(filePath, sourceText).value;
}

export function defaultExportExpression(file: SourceFile): Expression | undefined {
  const assignment = file.getExportAssignment((node) => !node.isExportEquals());
  if (assignment) return assignment.getExpression();
  const declaration = file.getDefaultExportSymbol()?.getDeclarations()[0];
  if (declaration && Node.isVariableDeclaration(declaration)) return declaration.getInitializer();
  return undefined;
}

/** The schema's object literal in a source file, for editing it in place (authstrap add-auth). */
export function schemaObjectLiteral(file: SourceFile) {
  const exported = defaultExportExpression(file);
  const literal = exported && unwrapExport(exported, file);
  return literal && Node.isObjectLiteralExpression(literal) ? literal : undefined;
}

/**
 * The object literal behind the default export: also through `defineSchema(x)`, and through
 * `const schema = ...; export default schema` (a `const` of this file, so it cannot be changed).
 */
function unwrapExport(expression: Expression, file: SourceFile): Expression {
  let current = unwrap(expression);
  const followed = new Set<Node>();
  for (;;) {
    if (Node.isCallExpression(current) && current.getArguments().length === 1) {
      current = unwrap(current.getArguments()[0] as Expression);
      continue;
    }
    const declaration = Node.isIdentifier(current) ? file.getVariableDeclaration(current.getText()) : undefined;
    const initializer = declaration?.getVariableStatement()?.getDeclarationKind() === 'const' ? declaration.getInitializer() : undefined;
    if (!initializer || followed.has(initializer)) return current;
    followed.add(initializer);
    current = unwrap(initializer);
  }
}

/** Looks through `x satisfies T`, `x as const` and `(x)`. */
function unwrap(expression: Expression): Expression {
  let current: Expression = expression;
  while (Node.isSatisfiesExpression(current) || Node.isAsExpression(current) || Node.isParenthesizedExpression(current)) {
    current = current.getExpression();
  }
  return current;
}

interface ReadContext {
  fileName: string;
  /** The keys from the top of the literal to this value. */
  path: string[];
  /** Filled with where each property's key is written. */
  locations: Map<string, SourceLocation>;
}

function toValue(node: Expression, context: ReadContext): unknown {
  const { fileName } = context;
  const where = (at: Node = node) => {
    const { line, column } = at.getSourceFile().getLineAndColumnAtPos(at.getStart());
    return `${fileName}:${line}:${column}`;
  };
  switch (node.getKind()) {
    case SyntaxKind.StringLiteral:
    case SyntaxKind.NoSubstitutionTemplateLiteral:
      return (node as unknown as { getLiteralValue(): string }).getLiteralValue();
    case SyntaxKind.NumericLiteral:
      return Number(node.getText().replace(/_/g, ''));
    case SyntaxKind.TrueKeyword:
      return true;
    case SyntaxKind.FalseKeyword:
      return false;
    case SyntaxKind.NullKeyword:
      return null;
    case SyntaxKind.PrefixUnaryExpression: {
      const unary = node.asKindOrThrow(SyntaxKind.PrefixUnaryExpression);
      const operand = toValue(unary.getOperand() as Expression, context);
      if (unary.getOperatorToken() === SyntaxKind.MinusToken && typeof operand === 'number') return -operand;
      break;
    }
    case SyntaxKind.ArrayLiteralExpression:
      return node
        .asKindOrThrow(SyntaxKind.ArrayLiteralExpression)
        .getElements()
        .map((element, index) => {
          // Each element is located too, so that a message can point at the one at fault.
          const path = [...context.path, String(index)];
          context.locations.set(locationKey(path), element.getSourceFile().getLineAndColumnAtPos(element.getStart()));
          return toValue(unwrap(element), { ...context, path });
        });
    case SyntaxKind.ObjectLiteralExpression: {
      const result: Record<string, unknown> = {};
      for (const property of node.asKindOrThrow(SyntaxKind.ObjectLiteralExpression).getProperties()) {
        if (!Node.isPropertyAssignment(property)) {
          throw new SchemaError([
            `${where(property)}: only \`key: value\` properties are allowed in the schema (found \`${property.getText().slice(0, 40)}\`)`,
          ]);
        }
        const nameNode = property.getNameNode();
        if (Node.isComputedPropertyName(nameNode)) {
          throw new SchemaError([
            `${where(property)}: property names must be written out, not computed (found \`${nameNode.getText().slice(0, 40)}\`)`,
          ]);
        }
        const key = Node.isStringLiteral(nameNode) || Node.isNumericLiteral(nameNode) ? String(nameNode.getLiteralValue()) : nameNode.getText();
        const path = [...context.path, key];
        const file = property.getSourceFile();
        context.locations.set(locationKey(path), file.getLineAndColumnAtPos(nameNode.getStart()));
        result[key] = toValue(unwrap(property.getInitializerOrThrow()), { ...context, path });
      }
      return result;
    }
  }
  throw new SchemaError([
    `${where()}: the schema must be plain data (strings, numbers, booleans, null, arrays, objects); \`${node.getText().slice(0, 40)}\` is computed`,
  ]);
}
