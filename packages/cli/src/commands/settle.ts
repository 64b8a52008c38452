import fs from 'node:fs';
import path from 'node:path';
import { CliError } from '../cli-error.js';
import { applyWrites, loadTemplates, renderOwnedFiles } from '../generate/index.js';
import { ownedFilesPath, ownedOfferSuffix, type FileWrite } from '../generate/apply.js';
import { readProjectEnv } from '../project/env-file.js';
import { planSettle, type Settlement } from '../generate/settle.js';
import { loadSchemaWithSource } from '../schema/index.js';

export interface SettleOptions {
  dir?: string;
}

const done = { resolve: 'merged', decline: 'declined' } as const;

/**
 * `authstrap resolve <files...>` / `authstrap decline <files...>`: records that the pending upgrade
 * of each owned file is merged, or declined. All or nothing: one file that cannot be settled (still
 * has conflict markers, say) and none is.
 */
export async function settleCommand(how: Settlement, files: string[], options: SettleOptions): Promise<void> {
  const projectDir = path.resolve(options.dir ?? '.');
  const recordFile = path.join(projectDir, ownedFilesPath);
  if (!fs.existsSync(recordFile)) throw new CliError(`${projectDir} has no ${ownedFilesPath}: run \`authstrap ${how}\` in the project folder, or pass it with --dir`, 2);
  const { schema } = loadSchemaWithSource(projectDir);
  // Rendered as generate renders them (the README names the port of the project's .env).
  const port = Number(readProjectEnv(projectDir).PORT);
  const backendPort = Number.isInteger(port) && port > 0 ? port : undefined;
  const owned = new Map(renderOwnedFiles(projectDir, schema, loadTemplates(), { backendPort }).map((file) => [file.path, file]));
  const read = (file: string) => (fs.existsSync(path.join(projectDir, file)) ? fs.readFileSync(path.join(projectDir, file), 'utf8') : undefined);
  let recordText = read(ownedFilesPath);
  const problems: string[] = [];
  const settled: string[] = [];
  const writes = new Map<string, FileWrite>();
  function planSettleFor(file: string): FileWrite[] {
    const plan = planSettle(how, { path: file, planned: owned.get(file), current: read(file), recordText, offerExists: fs.existsSync(path.join(projectDir, `${file}${ownedOfferSuffix}`)) });
    if ('problem' in plan) {
      problems.push(plan.problem);
      return [];
    }
    return plan.writes;
  }
  for (const named of files) {
    // Named as generate names them: relative to the project folder (an absolute path is made so).
    const file = (path.isAbsolute(named) ? path.relative(projectDir, named) : path.normalize(named)).split(path.sep).join('/');
    const fileWrites = planSettleFor(file);
    for (const write of fileWrites) {
      writes.set(write.path, write);
      // The next file's settlement starts from this one's record.
      if (write.path === ownedFilesPath) recordText = write.contents;
    }
    if (fileWrites.length > 0) settled.push(file);
  }
  if (problems.length > 0) throw new CliError(`Nothing recorded:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`, 1);
  applyWrites(projectDir, [...writes.values()]);
  for (const file of settled) console.log(`${done[how]}: ${file}`);
  console.log(how === 'resolve' ? 'The next upgrade of authstrap merges from these files as they are now.' : 'Your files stay as they are; the next upgrade of authstrap merges its changes from this version into them.');
}
