import { randomBytes } from 'node:crypto';
import { findLoopbackMix, type EnvFileText } from '../project/loopback-hosts.js';
import { validateSchema } from '../schema/validate.js';
import type { DatabaseProbe } from './database.js';
import type { HttpClient, Probe } from './http.js';

/**
 * The checks of `authstrap verify`, each a small function of a shared context that returns pass,
 * fail or skip with a one-line reason. Printing is elsewhere. A failed check names the
 * `authstrap fix` check that repairs that kind of breakage, where there is one.
 */

/** `warn`: the backend works, but something around it will bite (never fails verify). */
export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  id: string;
  title: string;
  status: CheckStatus;
  message: string;
  /** What to run or do about a failure. */
  fix?: string;
  /** The backend answered 429: the check did not run (see the message for when to retry). */
  rateLimited?: true;
}

export interface Person {
  id: string;
  email: string;
  password: string;
  token: string;
  organizationId: string;
}

export interface VerifyContext {
  http: HttpClient;
  db?: DatabaseProbe;
  runId: string;
  people: { alice?: Person; bob?: Person };
  /** Everything created, for the clean-up. */
  created: { userIds: string[]; organizationIds: string[] };
  /** SERVICE_API_KEY, when known: what a Better Auth adapter signs in to the backend with. */
  serviceKey?: string;
}

interface Outcome {
  status: CheckStatus;
  message: string;
}

export interface Check {
  id: string;
  title: string;
  fix?: string;
  /** 'http' checks run against the running backend; 'database' ones read the database. */
  needs: 'http' | 'database';
  run(context: VerifyContext): Promise<Outcome>;
}

const pass = (message: string): Outcome => ({ status: 'pass', message });
const fail = (message: string): Outcome => ({ status: 'fail', message });
const skip = (message: string): Outcome => ({ status: 'skip', message });
const describe = (probe: Probe) => `${probe.status}${probe.body?.error?.message ? ` ${probe.body.error.message}` : ''}`;

export const newRunId = () => randomBytes(4).toString('hex');

/** The auth tables and their columns, from the same built-in definitions the generator uses. */
export function expectedAuthTables(): Record<string, string[]> {
  const schema = validateSchema({ auth: true, entities: {} });
  return Object.fromEntries(schema.entities.map((entity) => [entity.table, entity.fields.map((field) => field.column)]));
}

async function signUp(context: VerifyContext, name: string): Promise<Person | string> {
  const email = `verify-${name.toLowerCase()}-${context.runId}@example.com`;
  const password = `verify-${randomBytes(6).toString('hex')}`;
  const response = await context.http('POST', '/api/auth/sign-up/email', { body: { email, name, password }, trusted: true });
  if (response.status !== 201 || !response.body?.data?.token) return `sign-up answered ${describe(response)}`;
  const { user, token } = response.body.data;
  context.created.userIds.push(user.id);
  const session = await context.http('GET', '/api/auth/get-session', { token });
  const organizationId = session.body?.data?.organizations?.[0]?.id;
  if (!organizationId) return `get-session after sign-up answered ${describe(session)} without an organization`;
  context.created.organizationIds.push(organizationId);
  return { id: user.id, email, password, token, organizationId };
}

export const checks: Check[] = [
  {
    id: 'server-up',
    title: 'Server answers',
    needs: 'http',
    fix: 'start it: npm start (in the project folder)',
    async run({ http }) {
      const response = await http('GET', '/health');
      return response.status === 200 ? pass('GET /health 200') : fail(`GET /health answered ${response.status}`);
    },
  },
  {
    id: 'database-connected',
    title: 'Database connected',
    needs: 'http',
    fix: 'check DATABASE_URL in .env',
    async run({ http }) {
      const response = await http('GET', '/ready');
      return response.status === 200 ? pass(`GET /ready 200 (${response.body?.data?.database ?? 'database'})`) : fail(`GET /ready answered ${describe(response)}`);
    },
  },
  {
    id: 'api-docs',
    title: 'OpenAPI docs at /api/docs',
    needs: 'http',
    fix: 'authstrap fix (check: module-wiring)',
    async run({ http }) {
      const page = await http('GET', '/api/docs/', { trusted: true });
      const document = await http('GET', '/api/docs/openapi.json', { trusted: true });
      if (page.status !== 200 || !page.text.includes('swagger')) return fail(`GET /api/docs answered ${page.status}`);
      if (document.status !== 200 || !String(document.body?.openapi).startsWith('3.')) return fail(`GET /api/docs/openapi.json answered ${document.status}`);
      return pass(`page and OpenAPI ${document.body.openapi} document, ${Object.keys(document.body.paths ?? {}).length} paths`);
    },
  },
  {
    id: 'sign-up',
    title: 'Sign-up creates a user',
    needs: 'http',
    fix: 'authstrap fix (check: credential-provider)',
    async run(context) {
      const alice = await signUp(context, 'Alice');
      if (typeof alice === 'string') return fail(alice);
      context.people.alice = alice;
      const bob = await signUp(context, 'Bob');
      if (typeof bob === 'string') return fail(bob);
      context.people.bob = bob;
      return pass('POST /api/auth/sign-up/email 201, with a session and an organization');
    },
  },
  {
    id: 'sign-in',
    title: 'Sign-in checks the password',
    needs: 'http',
    fix: 'authstrap fix (check: credential-provider)',
    async run({ http, people: { alice } }) {
      if (!alice) return skip('needs a signed-up user');
      const right = await http('POST', '/api/auth/sign-in/email', { body: { email: alice.email, password: alice.password }, trusted: true });
      if (right.status !== 200 || !right.body?.data?.token) return fail(`the right password answered ${describe(right)}`);
      const wrong = await http('POST', '/api/auth/sign-in/email', { body: { email: alice.email, password: `${alice.password}-wrong` }, trusted: true });
      if (wrong.status !== 401) return fail(`a wrong password answered ${wrong.status}, not 401`);
      return pass('right password 200, wrong password 401');
    },
  },
  {
    id: 'session',
    title: 'The session authenticates',
    needs: 'http',
    async run({ http, people: { alice } }) {
      if (!alice) return skip('needs a signed-up user');
      const session = await http('GET', '/api/auth/get-session', { token: alice.token });
      if (session.status !== 200 || session.body?.data?.user?.id !== alice.id) return fail(`get-session answered ${describe(session)}`);
      const anonymous = await http('GET', '/api/auth/get-session');
      if (anonymous.status !== 401) return fail(`get-session without a session answered ${anonymous.status}, not 401`);
      return pass('get-session 200 with the token, 401 without');
    },
  },
  {
    id: 'auth-endpoints',
    title: 'GET /Users, /accounts, /sessions; POST /Users',
    needs: 'http',
    fix: 'authstrap fix (check: module-wiring)',
    async run(context) {
      const { http, people: { alice } } = context;
      if (!alice) return skip('needs a signed-up user');
      const as = { token: alice.token, organizationId: alice.organizationId };
      for (const path of ['/Users', '/accounts', '/sessions']) {
        const response = await http('GET', path, as);
        if (response.status !== 200 || !Array.isArray(response.body?.data)) return fail(`GET ${path} answered ${describe(response)}`);
      }
      // "POST /Users creates a user" is the service key's; an owner's POST /Users is an invitation (202).
      const email = `verify-carol-${context.runId}@example.com`;
      if (!context.serviceKey) {
        const invited = await http('POST', '/Users', { ...as, body: { email, name: 'Carol' } });
        if (invited.status !== 202) return fail(`POST /Users by an owner answered ${describe(invited)}, not 202 (an invitation)`);
        return pass('200, 200, 200, and 202 for an owner (an invitation; no SERVICE_API_KEY to create a user with)');
      }
      const created = await http('POST', '/Users', { token: context.serviceKey, body: { email, name: 'Carol' } });
      if (created.status !== 201) return fail(`POST /Users with the service key answered ${describe(created)}`);
      context.created.userIds.push(created.body.data.id);
      return pass('200, 200, 200 and 201 (POST /Users with the service key)');
    },
  },
  {
    id: 'tenant-isolation',
    title: 'Organizations cannot see each other',
    needs: 'http',
    fix: 'run `authstrap generate` so that every repository filters by organization',
    async run(context) {
      const { http, people: { alice, bob } } = context;
      if (!alice || !bob) return skip('needs two signed-up users');
      const asBob = { token: bob.token, organizationId: bob.organizationId };
      const users = await http('GET', '/Users?limit=100', asBob);
      if (users.body?.data?.some?.((user: { id: string }) => user.id === alice.id)) return fail("GET /Users in Bob's organization lists Alice");
      if ((await http('GET', `/Users/${alice.id}`, asBob)).status !== 404) return fail("Bob can read Alice's user by id");
      const intruding = await http('GET', '/Users', { token: bob.token, organizationId: alice.organizationId });
      if (intruding.status !== 403) return fail(`naming Alice's organization answered ${intruding.status}, not 403`);

      const collections = await tenantCollections(context);
      for (const { path, body } of collections) {
        const made = await http('POST', path, { token: alice.token, organizationId: alice.organizationId, body });
        if (made.status !== 201) return fail(`POST ${path} in Alice's organization answered ${describe(made)}`);
        const id = made.body.data.id;
        const listed = await http('GET', `${path}?limit=100`, asBob);
        if (listed.status !== 200) return fail(`GET ${path} in Bob's organization answered ${describe(listed)}`);
        if (listed.body.data.some((row: { id: string }) => row.id === id)) return fail(`GET ${path} in Bob's organization lists Alice's record`);
        const read = await http('GET', `${path}/${id}`, asBob);
        if (read.status !== 404) return fail(`GET ${path}/:id of Alice's record in Bob's organization answered ${read.status}, not 404`);
      }
      const checked = ['/Users', ...collections.map((collection) => collection.path)];
      return pass(`checked ${checked.join(', ')}`);
    },
  },
  {
    id: 'tables',
    title: 'Auth tables exist with their columns',
    needs: 'database',
    fix: 'start the backend once to apply its migrations; then authstrap fix (check: nullability)',
    async run({ db }) {
      const rows = await db!.query<{ table_name: string; column_name: string }>(
        `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()`,
      );
      const columns = new Map<string, Set<string>>();
      for (const row of rows) columns.set(row.table_name, (columns.get(row.table_name) ?? new Set()).add(row.column_name));
      const problems: string[] = [];
      for (const [table, expected] of Object.entries(expectedAuthTables())) {
        const actual = columns.get(table);
        if (!actual) problems.push(`table "${table}" is missing`);
        else {
          const missing = expected.filter((column) => !actual.has(column));
          if (missing.length) problems.push(`"${table}" lacks ${missing.join(', ')}`);
        }
      }
      if (columns.get('User')?.has('password')) problems.push('"User" has a password column: passwords belong in "account"');
      return problems.length ? fail(problems.join('; ')) : pass(`${Object.keys(expectedAuthTables()).join(', ')}`);
    },
  },
  {
    id: 'service-credential',
    title: "A trusted server's password account keeps providerId 'credential' and its hash",
    needs: 'http',
    fix: 'authstrap fix (check: adapter-version); the adapter package must be 2.0.2 or newer',
    // What the Better Auth adapter does at every sign-up: the service key writes the user and a
    // credential account, and sign-in later reads the hash back. Without a key there is no adapter.
    async run(context) {
      const { http, serviceKey, runId } = context;
      if (!serviceKey) return skip('no service key (SERVICE_API_KEY): no adapter can use the backend');
      const as = { token: serviceKey };
      const user = await http('POST', '/Users', { ...as, body: { email: `verify-dora-${runId}@example.com`, name: 'Dora' } });
      if (user.status !== 201) return fail(`POST /Users with the service key answered ${describe(user)}`);
      context.created.userIds.push(user.body.data.id);
      // A bcrypt hash as an adapter stores it (of a password nobody knows).
      const hash = `$2b$10$${randomBytes(40).toString('base64').replace(/[+=]/g, '.').slice(0, 53)}`;
      const body = { userId: user.body.data.id, accountId: user.body.data.id, providerId: 'credential', password: hash };
      const created = await http('POST', '/accounts', { ...as, body });
      if (created.status !== 201) return fail(`POST /accounts with the service key answered ${describe(created)}`);
      const where = encodeURIComponent(JSON.stringify([{ field: 'userId', value: user.body.data.id }, { field: 'providerId', value: 'credential' }]));
      const found = await http('GET', `/accounts?where=${where}`, as);
      const account = found.body?.data?.[0];
      if (found.status !== 200 || !account) return fail(`the credential account is not found by userId and providerId: ${describe(found)}`);
      if (account.password !== hash) return fail('account.password does not read back as written: a Better Auth sign-in would fail');
      return pass("stored and read back with providerId 'credential' and the same bcrypt hash");
    },
  },
  {
    id: 'credential-account',
    title: "Sign-up stored an account with providerId 'credential' and a bcrypt hash",
    needs: 'database',
    fix: 'authstrap fix (check: credential-provider)',
    async run({ db, people: { alice } }) {
      if (!alice) return skip('needs a signed-up user');
      const users = await db!.query<{ id: string }>('SELECT "id" FROM "User" WHERE "id" = $1', [alice.id]);
      if (users.length !== 1) return fail('the signed-up user is not in "User"');
      const accounts = await db!.query<{ providerId: string | null; password: string | null }>('SELECT "providerId", "password" FROM "account" WHERE "userId" = $1', [alice.id]);
      if (accounts.length !== 1) return fail(`expected one account for the new user, found ${accounts.length}`);
      const [account] = accounts;
      if (account!.providerId !== 'credential') return fail(`account.providerId is ${JSON.stringify(account!.providerId)}, not 'credential': every sign-in will fail`);
      if (!/^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/.test(account!.password ?? '')) return fail('account.password is not a bcrypt hash');
      return pass(`providerId 'credential', bcrypt cost ${account!.password!.slice(4, 6)}`);
    },
  },
];

/**
 * Tenant-scoped collections from the OpenAPI document whose create body can be filled with
 * plain values (strings, numbers, booleans, enums), with such a body. Collections that need a
 * reference to another record are left out: the check cannot know a valid one.
 */
async function tenantCollections(context: VerifyContext): Promise<{ path: string; body: Record<string, unknown> }[]> {
  const document = (await context.http('GET', '/api/docs/openapi.json', { trusted: true })).body;
  const builtIn = new Set(['/users', '/accounts', '/sessions', '/verifications', '/organizations', '/members']);
  const schemas = document?.components?.schemas ?? {};
  const found: { path: string; body: Record<string, unknown> }[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(document?.paths ?? {})) {
    if (!/^\/[^/{}]+$/.test(path) || builtIn.has(path.toLowerCase())) continue;
    const scoped = (item.get?.parameters ?? []).some((parameter: { name: string }) => parameter.name === 'x-organization-id');
    let schema = item.post?.requestBody?.content?.['application/json']?.schema;
    if (!scoped || !schema) continue;
    if (schema.$ref) schema = schemas[String(schema.$ref).split('/').pop()!];
    const body = sampleBody(schema, context.runId);
    if (body) found.push({ path, body });
  }
  return found;
}

function sampleBody(schema: any, runId: string): Record<string, unknown> | undefined {
  const body: Record<string, unknown> = {};
  for (const name of schema?.required ?? []) {
    const property = schema.properties?.[name] ?? {};
    const type = Array.isArray(property.type) ? property.type.find((t: string) => t !== 'null') : property.type;
    if (property['x-references']) return undefined;
    if (property.enum) body[name] = property.enum[0];
    else if (type === 'string' && property.format === 'email') body[name] = `verify-${runId}@example.com`;
    else if (type === 'string' && !property.format) body[name] = `verify ${runId}`.padEnd(property.minLength ?? 0, 'x').slice(0, property.maxLength ?? 100);
    else if (type === 'integer' || type === 'number') body[name] = property.minimum ?? 1;
    else if (type === 'boolean') body[name] = false;
    else return undefined;
  }
  return body;
}

/**
 * Not a probe of the backend: its .env and its frontends' env files. localhost mixed with
 * 127.0.0.1 leaves the backend working and every browser request after sign-in a 401, so it is a
 * warning, reported only when found.
 */
export function loopbackHostsWarning(settings: { backend: EnvFileText; frontends: EnvFileText[] }): CheckResult | undefined {
  const mix = findLoopbackMix(settings.backend, settings.frontends);
  if (!mix) return undefined;
  return { id: 'loopback-hosts', title: 'Local URLs use one name for this machine', status: 'warn', message: mix.message, fix: `authstrap fix (check: loopback-hosts) uses localhost in ${mix.rewritten.join(', ')}` };
}
