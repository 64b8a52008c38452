// Debian's nginx (the nginx-light package), started on a loopback port with a configuration file
// written here around the site that docs/deploy.md shows, so the documented text is the one that
// is tested and measured (examples/saas-backend/test/rolling-restart.test.ts,
// bench/rolling-restart.mjs): `siteFromDeployDocs` takes it from there and changes only addresses.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { accepts } from './loopback.mjs';

const deployDocs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'deploy.md');

export const nginxBinary = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((candidate) => fs.existsSync(candidate)) ?? (spawnSync('nginx', ['-v']).status === 0 ? 'nginx' : undefined);

/**
 * The nginx block of docs/deploy.md (the one with `upstream authstrap`), with its `server` lines
 * pointed at `instancePorts` on 127.0.0.1 and `listen 80` at `listenPort` on 127.0.0.1. Throws
 * when the block no longer has what is changed here, rather than run something else.
 */
export function siteFromDeployDocs(instancePorts, listenPort) {
  const blocks = [...fs.readFileSync(deployDocs, 'utf8').matchAll(/```nginx\n([\s\S]*?)```/g)].map((match) => match[1]);
  const site = blocks.find((block) => /upstream authstrap \{/.test(block));
  if (!site) throw new Error('docs/deploy.md has no ```nginx block with `upstream authstrap {`');
  let server = 0;
  const pointed = site.replace(/^(\s*server )\S+:\d+/gm, (_line, start) => `${start}127.0.0.1:${instancePorts[server++]}`);
  if (server !== instancePorts.length) throw new Error(`docs/deploy.md's upstream has ${server} server lines, not ${instancePorts.length}`);
  const listening = pointed.replace(/^(\s*)listen 80;/m, `$1listen 127.0.0.1:${listenPort};`);
  if (listening === pointed) throw new Error("docs/deploy.md's nginx block has no `listen 80;` line");
  return listening;
}

/**
 * Starts nginx (a master and one worker) with `site` inside a minimal `http {}` of its own, in a
 * folder of its own. Its access log has one line per request: `<status> <upstream addresses>
 * <upstream statuses> <method> <uri>` (a retried request names each instance it went to).
 */
export async function startNginx(site, listenPort) {
  if (!nginxBinary) throw new Error('nginx is not installed (apt-get install nginx-light)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'authstrap-nginx-'));
  // The worker runs as nobody when nginx is started as root: its temporary files go where it may write.
  fs.chmodSync(dir, 0o777);
  const config = `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  log_format upstreams '$status $upstream_addr $upstream_status $request_method $request_uri';
  access_log ${dir}/access.log upstreams;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${site}
}
`;
  const configFile = path.join(dir, 'nginx.conf');
  fs.writeFileSync(configFile, config);
  const options = ['-p', dir, '-e', `${dir}/error.log`, '-c', configFile];
  const check = spawnSync(nginxBinary, ['-t', ...options], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx refuses the configuration:\n${check.stderr}\n${config}`);

  const child = spawn(nginxBinary, [...options, '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 10_000;
  while (!(await accepts(listenPort))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not start:\n${output}\n${readIfThere(path.join(dir, 'error.log'))}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `http://127.0.0.1:${listenPort}`,
    accessLog: () => readIfThere(path.join(dir, 'access.log')),
    errorLog: () => readIfThere(path.join(dir, 'error.log')),
    async stop() {
      // SIGTERM is nginx's fast shutdown; SIGKILL if it has not gone within 5 s.
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function readIfThere(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
