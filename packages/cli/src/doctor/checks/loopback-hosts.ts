import { findLoopbackMix, loopbackHosts } from '../../project/loopback-hosts.js';
import type { DoctorCheck, FileChange } from '../checks.js';
import { frontendEnvTexts } from '../project-state.js';

/**
 * `localhost` mixed with `127.0.0.1` (or `[::1]`, `0.0.0.0`) among the backend's AUTH_URL and
 * ALLOWED_ORIGINS and its frontends' env files: the browser drops the session cookie between the
 * two "sites" and every request after sign-in is 401. A failure, since sign-in is broken for
 * every browser user; the repair writes `localhost` into every such setting.
 */
export const loopbackHostsCheck: DoctorCheck = {
  id: 'loopback-hosts',
  title: 'Local URLs use one name for this machine',
  examine(state, planned) {
    const onDisk = [{ path: '.env', text: state.files['.env'] ?? '' }, ...frontendEnvTexts(state.dir, state.frontends)];
    // From the files as earlier repairs leave them: cors-origin may add an origin to the same .env.
    const [backend, ...frontends] = onDisk.map((file) => ({ path: file.path, text: planned[file.path] ?? file.text }));
    const mix = findLoopbackMix(backend, frontends);
    if (!mix) {
      const [only] = loopbackHosts(backend, frontends);
      return { status: 'pass', message: only ? `every local URL uses ${only.host} (${only.settings.join(', ')})` : 'no local URL in AUTH_URL, ALLOWED_ORIGINS or a frontend\'s env files' };
    }
    const files: FileChange[] = mix.files.map((file) => ({ path: file.path, before: onDisk.find((disk) => disk.path === file.path)!.text, after: file.after }));
    return { status: 'fail', message: mix.message, repair: { summary: `use localhost in ${mix.rewritten.join(', ')}`, files, sql: [] } };
  },
};
