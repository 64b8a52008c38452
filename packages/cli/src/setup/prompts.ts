import path from 'node:path';
import { input, password, select } from '@inquirer/prompts';
import type { SetupFlags } from './options.js';

/**
 * Asks for what the flags did not say: project name, ports (the frontend's only when there is a
 * frontend) and the database. Answers are returned as flags, so that they go through the same
 * checks as typed ones.
 */
export async function askForMissing(flags: SetupFlags): Promise<SetupFlags> {
  const answers: SetupFlags = { ...flags };
  answers.projectName ??= await input({
    message: 'Project name',
    // A folder given with --dir suggests its own name.
    default: flags.dir ? path.basename(path.resolve(flags.dir)).toLowerCase() : 'my-backend',
    validate: (value) => /^[a-z0-9][a-z0-9._-]*$/.test(value) || 'lowercase letters, digits, ".", "_" or "-"',
  });
  const port = (value: string) => (/^\d+$/.test(value) && Number(value) >= 1 && Number(value) <= 65535) || 'a port from 1 to 65535';
  answers.backendPort ??= await input({ message: 'Backend port', default: '3000', validate: port });
  if (answers.frontend === undefined) {
    const folder = await input({ message: 'Next.js frontend: a new folder, or an existing app to connect (empty for none)', default: '' });
    if (folder.trim()) answers.frontend = folder.trim();
  }
  // Without a frontend there is no port to ask for: CORS allows Vite's default (--frontend-port to change it).
  if (answers.frontend !== undefined) answers.frontendPort ??= await input({ message: 'Frontend port (allowed by CORS)', default: '3001', validate: port });

  if (answers.databaseUrl === undefined && answers.db === undefined) {
    answers.db = await select({
      message: 'Database',
      choices: [
        { name: 'Embedded PostgreSQL (nothing to install; data in .data/pglite)', value: 'embedded' },
        { name: 'A PostgreSQL server', value: 'postgres' },
      ],
    });
  }
  if (answers.db === 'postgres' && answers.databaseUrl === undefined) {
    const host = await input({ message: 'PostgreSQL host', default: 'localhost' });
    const dbPort = await input({ message: 'PostgreSQL port', default: '5432', validate: port });
    const user = await input({ message: 'PostgreSQL user', default: 'postgres' });
    const secret = await password({ message: 'PostgreSQL password (empty for none)', mask: '*' });
    const database = await input({ message: 'Database name (created if missing)', default: answers.projectName!.replace(/[^a-z0-9_]/g, '_') });
    const credentials = secret ? `${encodeURIComponent(user)}:${encodeURIComponent(secret)}` : encodeURIComponent(user);
    answers.databaseUrl = `postgresql://${credentials}@${host}:${dbPort}/${encodeURIComponent(database)}`;
  }
  return answers;
}
