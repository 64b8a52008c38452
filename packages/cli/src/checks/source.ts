import { Node, Project, SyntaxKind, type SourceFile } from 'ts-morph';
import type { FileChange } from './check.js';
import type { ProjectSnapshot } from './project-snapshot.js';

/**
 * The project's TypeScript as syntax (ts-morph), never as text: a commented-out line is no code,
 * and a statement after a `return` is never run.
 */

const project = new Project({ useInMemoryFileSystem: true, compilerOptions: { noLib: true }, skipFileDependencyResolution: true });

export function parseSource(path: string, text: string): SourceFile {
  return project.createSourceFile(`/${path}`, text, { overwrite: true });
}

/**
 * Whether a node runs when its function does, as far as the syntax alone can tell: no statement
 * before it in any enclosing block always leaves that block (`return`, `throw`, `break`,
 * `continue`, or a block or `if` whose every way through does), and no enclosing branch is dead
 * by a constant condition (`if (false)`, `if (0)`, `while (false)`, `false && x`, `true || x`,
 * `false ? x : y`, `for (;0;)`...).
 *
 * Why not TypeScript's own unreachable-code errors (TS7027, `allowUnreachableCode: false`):
 * the compiler reports whole statements only, and folds no condition but the `true` and `false`
 * keywords, so `if (0) { ... }`, `false && app.use(...)` and a constant ternary pass it; it also
 * needs the whole program (lib and node_modules) to be right. Folding literal conditions with
 * JavaScript's own truthiness, on the syntax tree, covers what the compiler does and those too.
 * A condition that is not a literal (a variable, `process.env.X`) counts as possibly true.
 */
export function isReachable(node: Node): boolean {
  for (let current: Node | undefined = node; current && !Node.isSourceFile(current); current = current.getParent()) {
    if (Node.isFunctionLikeDeclaration(current)) return true;
    const parent = current.getParent();
    if (!parent) break;
    if (isDeadBranch(parent, current)) return false;
    if (!(Node.isBlock(parent) || Node.isSourceFile(parent) || Node.isCaseClause(parent) || Node.isDefaultClause(parent))) continue;
    const statements = parent.getStatements();
    const index = statements.indexOf(current as (typeof statements)[number]);
    if (statements.slice(0, index).some(alwaysLeaves)) return false;
  }
  return true;
}

/** Whether `child` of `parent` is a branch its constant condition never takes. */
function isDeadBranch(parent: Node, child: Node): boolean {
  if (Node.isIfStatement(parent) || Node.isConditionalExpression(parent)) {
    const condition = truthiness(Node.isIfStatement(parent) ? parent.getExpression() : parent.getCondition());
    const [whenTrue, whenFalse] = Node.isIfStatement(parent) ? [parent.getThenStatement(), parent.getElseStatement()] : [parent.getWhenTrue(), parent.getWhenFalse()];
    return (child === whenTrue && condition === false) || (child === whenFalse && condition === true);
  }
  if (Node.isWhileStatement(parent) || Node.isForStatement(parent)) {
    const condition = Node.isWhileStatement(parent) ? parent.getExpression() : parent.getCondition();
    return child === parent.getStatement() && condition !== undefined && truthiness(condition) === false;
  }
  if (Node.isBinaryExpression(parent) && child === parent.getRight()) {
    const operator = parent.getOperatorToken().getKind();
    const left = constantValue(parent.getLeft());
    if (!left) return false;
    if (operator === SyntaxKind.AmpersandAmpersandToken) return !left.value;
    if (operator === SyntaxKind.BarBarToken) return Boolean(left.value);
    if (operator === SyntaxKind.QuestionQuestionToken) return left.value !== null && left.value !== undefined;
  }
  return false;
}

/** Whether running this statement never goes on to the next one. */
function alwaysLeaves(statement: Node): boolean {
  if (Node.isReturnStatement(statement) || Node.isThrowStatement(statement) || Node.isBreakStatement(statement) || Node.isContinueStatement(statement)) return true;
  if (Node.isBlock(statement)) return statement.getStatements().some(alwaysLeaves);
  if (Node.isIfStatement(statement)) {
    const condition = truthiness(statement.getExpression());
    const otherwise = statement.getElseStatement();
    const thenLeaves = alwaysLeaves(statement.getThenStatement());
    const elseLeaves = otherwise !== undefined && alwaysLeaves(otherwise);
    return condition === true ? thenLeaves : condition === false ? elseLeaves : thenLeaves && elseLeaves;
  }
  return false;
}

/** true or false when an expression's truth is fixed by literals alone; undefined otherwise. */
export function truthiness(expression: Node): boolean | undefined {
  const constant = constantValue(expression);
  return constant ? Boolean(constant.value) : undefined;
}

/**
 * The value of an expression made of literals only (`0`, `''`, `null`, `undefined`, `void 0`,
 * `!1`, `(false)`, `1 === 2`, `false as boolean`...), or undefined when it depends on anything else.
 */
function constantValue(expression: Node): { value: unknown } | undefined {
  if (Node.isParenthesizedExpression(expression) || Node.isAsExpression(expression) || Node.isSatisfiesExpression(expression) || Node.isNonNullExpression(expression) || Node.isTypeAssertion(expression)) {
    return constantValue(expression.getExpression());
  }
  if (Node.isTrueLiteral(expression)) return { value: true };
  if (Node.isFalseLiteral(expression)) return { value: false };
  if (Node.isNullLiteral(expression)) return { value: null };
  if (Node.isNumericLiteral(expression)) return { value: expression.getLiteralValue() };
  if (Node.isStringLiteral(expression) || Node.isNoSubstitutionTemplateLiteral(expression)) return { value: expression.getLiteralValue() };
  if (Node.isIdentifier(expression) && ['undefined', 'NaN'].includes(expression.getText())) return { value: expression.getText() === 'NaN' ? NaN : undefined };
  if (Node.isVoidExpression(expression)) return { value: undefined };
  if (Node.isPrefixUnaryExpression(expression)) {
    const operand = constantValue(expression.getOperand());
    if (!operand) return undefined;
    const operator = expression.getOperatorToken();
    if (operator === SyntaxKind.ExclamationToken) return { value: !operand.value };
    if (operator === SyntaxKind.MinusToken) return { value: -(operand.value as number) };
    if (operator === SyntaxKind.PlusToken) return { value: +(operand.value as number) };
    return undefined;
  }
  if (Node.isBinaryExpression(expression)) {
    const left = constantValue(expression.getLeft());
    if (!left) return undefined;
    const operator = expression.getOperatorToken().getKind();
    // The right side decides only when the left does not: `false && anything` is false.
    if (operator === SyntaxKind.AmpersandAmpersandToken) return left.value ? constantValue(expression.getRight()) : left;
    if (operator === SyntaxKind.BarBarToken) return left.value ? left : constantValue(expression.getRight());
    if (operator === SyntaxKind.QuestionQuestionToken) return left.value === null || left.value === undefined ? constantValue(expression.getRight()) : left;
    const right = constantValue(expression.getRight());
    if (!right) return undefined;
    const [a, b] = [left.value as number, right.value as number];
    const compared: Partial<Record<SyntaxKind, () => boolean>> = {
      [SyntaxKind.EqualsEqualsEqualsToken]: () => a === b,
      [SyntaxKind.ExclamationEqualsEqualsToken]: () => a !== b,
      [SyntaxKind.EqualsEqualsToken]: () => a == b,
      [SyntaxKind.ExclamationEqualsToken]: () => a != b,
      [SyntaxKind.LessThanToken]: () => a < b,
      [SyntaxKind.LessThanEqualsToken]: () => a <= b,
      [SyntaxKind.GreaterThanToken]: () => a > b,
      [SyntaxKind.GreaterThanEqualsToken]: () => a >= b,
    };
    const compare = compared[operator];
    return compare ? { value: compare() } : undefined;
  }
  return undefined;
}

/**
 * Files that `authstrap generate` writes from the schema and would change now, with what is on
 * disk: src/generated/, and with `withClient` the typed client and its copies (`clientPaths`).
 */
export function staleGenerated(project: ProjectSnapshot, select: (change: FileChange) => boolean, options: { withClient?: boolean } = {}): FileChange[] {
  const fromSchema = (path: string) => path.startsWith('src/generated/') || (options.withClient === true && (project.clientPaths ?? []).includes(path));
  return (project.generatePlan?.writes ?? [])
    .filter((write) => fromSchema(write.path) && write.action !== 'remove')
    .map((write) => ({ path: write.path, before: project.generatedOnDisk?.[write.path] ?? '', after: write.contents ?? '' }))
    .filter(select);
}
