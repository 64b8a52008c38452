import { findLoopbackMix, loopbackHosts, type EnvFileText } from '../project/loopback-hosts.js';
import { fail, pass, type Check, type Finding } from './check.js';
import { frontendEnvTexts } from './project-snapshot.js';

/**
 * `localhost` mixed with `127.0.0.1` (or `[::1]`, `0.0.0.0`) among the backend's AUTH_URL and
 * ALLOWED_ORIGINS and its frontends' env files: the browser drops the session cookie between the
 * two "sites" and every request after sign-in is 401. A failure, since sign-in is broken for
 * every browser user; the repair writes `localhost` into every such setting.
 */
export const loopbackHostsCheck: Check = {
  id: 'loopback-hosts',
  title: 'Local URLs use one name for this machine',
  examine(project, planned) {
    const onDisk = [{ path: '.env', text: project.files['.env'] ?? '' }, ...frontendEnvTexts(project.dir, project.frontends)];
    // From the files as earlier repairs leave them: cors-origin may add an origin to the same .env.
    const [backend, ...frontends] = onDisk.map((file) => ({ path: file.path, text: planned[file.path] ?? file.text }));
    const finding = examineLoopbackHosts(backend!, frontends);
    // The repair's `before` is the file on disk, which is what apply compares against.
    for (const file of finding.repair?.files ?? []) file.before = onDisk.find((disk) => disk.path === file.path)!.text;
    return finding;
  },
};

/** The check on env file texts alone: also what `setup` runs on the project it wrote. */
export function examineLoopbackHosts(backend: EnvFileText, frontends: EnvFileText[]): Finding {
  const mix = findLoopbackMix(backend, frontends);
  if (!mix) {
    const [only] = loopbackHosts(backend, frontends);
    return pass(only ? `every local URL uses ${only.host} (${only.settings.join(', ')})` : "no local URL in AUTH_URL, ALLOWED_ORIGINS or a frontend's env files");
  }
  return { ...fail(mix.message), repair: { summary: `use localhost in ${mix.rewritten.join(', ')}`, files: mix.files.map((file) => ({ ...file })), sql: [] } };
}
