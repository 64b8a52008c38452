import { Node, Project, type SourceFile } from 'ts-morph';
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

/** Whether a node runs when its function does: no `return` or `throw` before it in any enclosing block. */
export function isReachable(node: Node): boolean {
  for (let current: Node | undefined = node; current && !Node.isSourceFile(current); current = current.getParent()) {
    if (Node.isFunctionLikeDeclaration(current)) return true;
    const parent = current.getParent();
    if (!parent || !(Node.isBlock(parent) || Node.isSourceFile(parent) || Node.isCaseClause(parent) || Node.isDefaultClause(parent))) continue;
    const statements = parent.getStatements();
    const index = statements.indexOf(current as (typeof statements)[number]);
    if (statements.slice(0, index).some((statement) => Node.isReturnStatement(statement) || Node.isThrowStatement(statement))) return false;
  }
  return true;
}

/** Generated files that `authstrap generate` would change, with what is on disk now. */
export function staleGenerated(project: ProjectSnapshot, select: (path: string, onDisk: string) => boolean): FileChange[] {
  return (project.generatePlan?.writes ?? [])
    .filter((write) => write.path.startsWith('src/generated/') && write.action !== 'remove')
    .map((write) => ({ path: write.path, before: project.generatedOnDisk?.[write.path] ?? '', after: write.contents ?? '' }))
    .filter((change) => select(change.path, change.before));
}
