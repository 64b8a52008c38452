import { randomUUID } from 'node:crypto';
import { Node, SyntaxKind, type CallExpression } from 'ts-morph';
import { fail, pass, plural, skip, warn, type Check } from './check.js';
import { generatedCollections, shownPath, withParent } from './collections.js';
import { lacksIds } from './id-field.js';
import { describe } from './probe-context.js';
import { isReachable, parseSource, staleGenerated, truthiness } from './source.js';

/**
 * "Module wiring": every generated router is mounted. `src/app.ts` must mount `generatedRouter`
 * where requests reach it (read as syntax: a commented-out line, a line after a `return` or after
 * the 404 handler, a branch whose literal condition never holds, `if (false)`, `if (0)`,
 * `false && ...` (isReachable in source.ts), is no mount), and `src/generated/` must be what
 * `authstrap generate` writes (its index mounts each entity's router). The probe asks the running backend for every
 * collection its OpenAPI document lists: a mounted one asks who is calling (401), a missing one
 * is unknown (404).
 */
export const moduleWiring: Check = {
  id: 'module-wiring',
  title: 'Every generated router is mounted and up to date',
  examine(project) {
    if (!project.generatePlan) return warn(`cannot read the schema: ${project.schemaProblem ?? 'unknown problem'}`);
    if (project.generatePlan.problems.length) return warn(`authstrap generate cannot run: ${project.generatePlan.problems.join('; ')}`);
    // Schema files without ids are id-field's.
    const changes = staleGenerated(project, (change) => !lacksIds(change.path, change.before));
    const problems = changes.map((change) => `${change.path} is ${change.before ? 'out of date' : 'missing'}`);
    const app = project.files['src/app.ts'] ?? '';
    const mount = app ? appMount(app) : undefined;
    if (mount && !mount.mounted) {
      problems.push(mount.problem);
      if (!mount.repaired) return fail(`${problems.join('; ')}; add ${mountStatement} before the 404 handler (app.use(unknownRoute)) by hand`);
      changes.push({ path: 'src/app.ts', before: app, after: mount.repaired });
    }
    if (changes.length === 0) return pass(app ? 'src/app.ts mounts generatedRouter, and src/generated matches the schema' : 'src/generated matches the schema (there is no src/app.ts to read)');
    return { ...fail(problems.join('; ')), repair: { summary: `write ${plural(changes.length, 'file')} (${changes.map((change) => change.path).join(', ')})`, files: changes, sql: [] } };
  },
  probe: {
    needs: 'http',
    async run({ http, openApi }) {
      const document = await openApi();
      if (!document) return skip('the backend serves no OpenAPI document (/api/docs/openapi.json) listing its collections');
      const collections = generatedCollections(document);
      const missing: string[] = [];
      for (const collection of collections) {
        const path = collection.parent ? withParent(collection, randomUUID()) : collection.path;
        const response = await http('GET', path);
        if (response.status === 404) missing.push(`${shownPath(collection.path)} (${describe(response)})`);
      }
      if (missing.length) return fail(`not mounted in the running backend: GET ${missing.join(', ')}`);
      return pass(`${plural(collections.length, 'collection')} answer without a session (401, not 404)`);
    },
  },
  advice: 'restart the backend: the project mounts every router, so the running process is older than its files',
};

const mountStatement = 'app.use(generatedRouter({ db, auth, config, transactions }))';

interface Edit {
  start: number;
  end: number;
  text: string;
}

type Mount = { mounted: true } | { mounted: false; problem: string; repaired?: string };

/**
 * Whether `src/app.ts` mounts `generatedRouter` where a request reaches it, and if not, the file
 * with the mount put back before the 404 handler (ineffective mounts and a commented-out copy
 * removed, the import added when it is missing).
 */
export function appMount(app: string): Mount {
  const source = parseSource('src/app.ts', app);
  const imported = source
    .getImportDeclarations()
    .filter((declaration) => /\/generated\/index(\.js)?$/.test(declaration.getModuleSpecifierValue()))
    .flatMap((declaration) => declaration.getNamedImports())
    .find((named) => named.getName() === 'generatedRouter');
  const localName = imported?.getAliasNode()?.getText() ?? 'generatedRouter';
  const uses = (argument: (node: Node) => boolean) =>
    source.getDescendantsOfKind(SyntaxKind.CallExpression).filter((call) => {
      const callee = call.getExpression();
      return Node.isPropertyAccessExpression(callee) && callee.getName() === 'use' && call.getArguments().some(argument);
    });
  const mounts = uses((argument) => Node.isCallExpression(argument) && argument.getExpression().getText() === localName);
  const notFound = uses((argument) => Node.isIdentifier(argument) && argument.getText() === 'unknownRoute').find(isReachable);
  const reachable = mounts.filter(isReachable);
  const effective = reachable.filter((mount) => !notFound || mount.getStart() < notFound.getStart());
  if (imported && effective.length > 0) return { mounted: true };

  const problem =
    effective.length > 0
      ? "src/app.ts mounts generatedRouter without importing it from './generated/index.js'"
      : mounts.length === 0
      ? 'src/app.ts does not mount generatedRouter'
      : reachable.length === 0
        ? 'src/app.ts mounts generatedRouter only where it never runs (after a return or throw, or in a branch whose condition is always false)'
        : 'src/app.ts mounts generatedRouter after the 404 handler (app.use(unknownRoute)), so no request reaches it';
  if (!notFound && effective.length === 0) return { mounted: false, problem };

  // Text edits at positions the syntax tree gives, applied from the end of the file backwards.
  const edits: Edit[] = [];
  if (effective.length === 0) {
    const removed = mounts.flatMap((mount) => ineffectiveStatement(mount) ?? []);
    edits.push(...removed.map((statement) => lineSpan(app, statement)), mountEdit(app, notFound!, localName));
  }
  if (!imported) {
    const lastImport = source.getImportDeclarations().at(-1);
    const at = lastImport ? lastImport.getEnd() : 0;
    edits.push({ start: at, end: at, text: lastImport ? `\nimport { generatedRouter } from './generated/index.js';` : `import { generatedRouter } from './generated/index.js';\n` });
  }
  let repaired = app;
  for (const edit of edits.sort((a, b) => b.start - a.start)) repaired = repaired.slice(0, edit.start) + edit.text + repaired.slice(edit.end);
  // A commented-out mount is replaced by the real one, not left beside it.
  if (effective.length === 0) repaired = repaired.replace(/^[ \t]*\/\/[ \t]*app\.use\(generatedRouter\(.*\)\);?[ \t]*\r?\n/m, '');
  return { mounted: false, problem, repaired };
}

/** The mount, inserted right after the statement before the 404 handler (where setup's app.ts has it). */
function mountEdit(app: string, notFound: CallExpression, localName: string): Edit {
  const callee = notFound.getExpression();
  const receiver = Node.isPropertyAccessExpression(callee) ? callee.getExpression().getText() : 'app';
  const statement = statementOf(notFound);
  const indent = app.slice(app.lastIndexOf('\n', statement.getStart() - 1) + 1, statement.getStart());
  const mountText = `${receiver}.use(${localName}({ db, auth, config, transactions }));`;
  const block = statement.getParent();
  const siblings = block && (Node.isBlock(block) || Node.isSourceFile(block)) ? block.getStatements() : [];
  const previous = siblings[siblings.indexOf(statement as (typeof siblings)[number]) - 1];
  if (previous) return { start: previous.getEnd(), end: previous.getEnd(), text: `\n${indent}${mountText}` };
  return { start: statement.getStart(), end: statement.getStart(), text: `${mountText}\n${indent}` };
}

/**
 * What to delete with a mount that never takes effect: its statement, with the dead `if` or loop
 * around it when that holds nothing else (`if (false) { mount }` goes whole). Nothing when the
 * statement calls anything besides the mount (`false ? mount : other()`): what else it does stays.
 */
function ineffectiveStatement(mount: CallExpression): Node | undefined {
  let statement = statementOf(mount);
  const others = statement.getDescendantsOfKind(SyntaxKind.CallExpression).filter((call) => call !== mount && !call.getAncestors().includes(mount));
  if (others.length > 0) return undefined;
  for (let parent = statement.getParent(); parent; parent = statement.getParent()) {
    // A block goes with its only statement when what holds the block goes too, or is a list of statements.
    const holder = Node.isBlock(parent) && parent.getStatements().length === 1 ? parent.getParent() : undefined;
    if (!holdsNothingElse(parent) && !(holder && (holdsNothingElse(holder) || Node.isBlock(holder) || Node.isSourceFile(holder)))) break;
    statement = parent;
  }
  return statement;
}

/** An `if` without else, or a loop that never runs, whose condition is a constant: around a dead mount, nothing else. */
function holdsNothingElse(node: Node): boolean {
  if (Node.isIfStatement(node)) return !node.getElseStatement() && truthiness(node.getExpression()) !== undefined;
  const condition = Node.isWhileStatement(node) ? node.getExpression() : Node.isForStatement(node) && !node.getInitializer() && !node.getIncrementor() ? node.getCondition() : undefined;
  return condition !== undefined && truthiness(condition) === false;
}

function statementOf(call: CallExpression): Node {
  return call.getFirstAncestor((node) => Node.isStatement(node)) ?? call;
}

/** A statement's whole lines when it has them to itself (so that removing it leaves no blank line), else just the statement. */
function lineSpan(text: string, node: Node): Edit {
  const lineStart = text.lastIndexOf('\n', node.getStart() - 1) + 1;
  const lineEnd = text.indexOf('\n', node.getEnd());
  const alone = /^[ \t]*$/.test(text.slice(lineStart, node.getStart())) && /^[ \t]*$/.test(text.slice(node.getEnd(), lineEnd === -1 ? text.length : lineEnd));
  return alone ? { start: lineStart, end: lineEnd === -1 ? text.length : lineEnd + 1, text: '' } : { start: node.getStart(), end: node.getEnd(), text: '' };
}
