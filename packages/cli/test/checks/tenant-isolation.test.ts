import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleBody, requiredReferences } from '../../src/checks/sample-body.js';
import { adminUrl, describeProbeBreakages, verifyProject, type VerifyRun } from '../support/check-cycle.js';
import { runCli } from '../support/cli.js';
import { breakFile, createResources, query } from '../support/example-copies.js';

/** An Invoice that references a Project, with fields of most kinds and constraints. */
const invoice = `    Invoice: {
      fields: {
        projectId: { type: 'uuid', references: 'Project', onDelete: 'cascade' },
        number: { type: 'string', minLength: 12, maxLength: 20, unique: true },
        total: { type: 'number', min: 10, max: 99 },
        lines: { type: 'integer', min: 1 },
        contact: { type: 'string', format: 'email' },
        currency: { type: 'enum', values: ['EUR', 'USD'] },
        dueAt: { type: 'datetime' },
        paid: { type: 'boolean' },
        memo: { type: 'text', nullable: true },
      },
    },
`;

/** The example with Invoice added and generated (src/generated, the migration). */
function withInvoice(dir: string) {
  breakFile(dir, 'authstrap.schema.ts', "      indexes: [['dueAt']],\n    },\n", `      indexes: [['dueAt']],\n    },\n${invoice}`);
  const generate = runCli(['generate'], dir);
  if (generate.status !== 0) throw new Error(`generate failed:\n${generate.output}`);
}

const byId = (run: VerifyRun, id: string) => run.report.checks.find((result) => result.id === id)!;

describe('a create body from the schema', () => {
  const reference = (entity: string) => (entity === 'Project' ? 'project-id' : undefined);
  const schema = {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      projectId: { type: 'string', format: 'uuid', 'x-references': 'Project' },
      number: { type: 'string', minLength: 12, maxLength: 20 },
      code: { type: 'string', maxLength: 3 },
      total: { type: 'number', minimum: 10, maximum: 99 },
      lines: { type: 'integer', exclusiveMinimum: 4 },
      contact: { type: 'string', format: 'email' },
      currency: { type: 'string', enum: ['EUR', 'USD'] },
      dueAt: { type: ['string', 'null'], format: 'date-time' },
      paid: { type: 'boolean' },
      data: {},
      memo: { type: ['string', 'null'] },
    },
    required: ['projectId', 'number', 'code', 'total', 'lines', 'contact', 'currency', 'dueAt', 'paid', 'data'],
  };

  it('fills every required field with a valid value of its type, and leaves the optional ones out', () => {
    const made = sampleBody(schema, { unique: 'r1', reference });
    expect(made).toEqual({
      body: {
        projectId: 'project-id',
        number: 'verify r1xxx',
        code: 'ver',
        total: 10,
        lines: 5,
        contact: 'verify-r1@example.com',
        currency: 'EUR',
        dueAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        paid: false,
        data: {},
      },
    });
  });

  it('names what it cannot fill in', () => {
    expect(sampleBody(schema, { unique: 'r1', reference: () => undefined })).toEqual({ problem: 'projectId needs a Project, which could not be made' });
    expect(sampleBody({ type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' } }, required: ['code'] }, { unique: 'r1', reference })).toEqual({ problem: 'code must match a pattern (^[A-Z]{3}$)' });
  });

  it('lists the entities its required fields reference', () => {
    expect(requiredReferences(schema)).toEqual(['Project']);
    expect(requiredReferences({ ...schema, required: ['number'] })).toEqual([]);
  });
});

describe.runIf(adminUrl)('tenant-isolation on a schema with an Invoice that references a Project', () => {
  const resources = createResources({ adminUrl, name: 'isolation' });
  let healthy: VerifyRun;
  beforeAll(async () => {
    const dir = resources.copyOfExample('ALLOWED_ORIGINS=http://localhost:5173\n');
    withInvoice(dir);
    healthy = await verifyProject(dir, await resources.startBackend(dir));
  }, 90_000);
  afterAll(resources.cleanup, 60_000);

  it('checks every tenant-scoped collection, the Invoice after its Project, and names each', () => {
    expect(byId(healthy, 'tenant-isolation'), healthy.output).toMatchObject({ status: 'pass', message: 'checked /Users, /Projects, /Tasks, /Projects/:projectId/Tasks, /Invoices' });
    expect(healthy.report.checks.filter((result) => result.status !== 'pass'), healthy.output).toEqual([]);
    expect(healthy.status).toBe(0);
  });
});

/** Row-level security switched off on `table`: the second wall down, so that the first one's gap shows. */
const rowSecurityOff = (table: string) => async (backend: { databaseUrl: string }) => {
  await query(backend.databaseUrl, `ALTER TABLE "${table}" NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY`);
};

const { stage } = describeProbeBreakages('tenant-isolation', [
  {
    name: "the Project list's read without its organization (a generated file edited), and row-level security off",
    breakFiles: (dir) => breakFile(dir, 'src/generated/Project/project.repository.ts', 'return listJson(db, projectListSpec, query, {}, [access.list]);', 'return listJson(db, projectListSpec, query, {}, []);'),
    breakData: rowSecurityOff('Project'),
    fails: ['tenant-isolation', 'module-wiring', 'row-level-security'],
    hint: 'caused by module-wiring, row-level-security: authstrap fix repairs module-wiring, row-level-security',
  },
  {
    name: "Invoice's read by id without its organization (a generated file edited), and row-level security off",
    breakFiles(dir) {
      withInvoice(dir);
      breakFile(dir, 'src/generated/Invoice/invoice.repository.ts', 'FROM "Invoice" WHERE "id" = $1 AND ${access.read.sql}`', 'FROM "Invoice" WHERE "id" = $1`');
    },
    breakData: rowSecurityOff('Invoice'),
    fails: ['tenant-isolation', 'module-wiring', 'row-level-security'],
    hint: 'caused by module-wiring, row-level-security: authstrap fix repairs module-wiring, row-level-security',
  },
  {
    name: 'an extension route of its own that reads any Invoice by id, under a policy opened up by hand',
    breakFiles(dir) {
      withInvoice(dir);
      breakFile(
        dir,
        'src/extensions/index.ts',
        'export function extensionRouter(_deps: { config: Config; db: Database; auth: AuthService }): Router {\n  const router = Router();\n',
        `export function extensionRouter({ db }: { config: Config; db: Database; auth: AuthService }): Router {\n  const router = Router();\n  router.get('/Invoices/:id', async (req, res) => {\n    const { rows } = await db.query('SELECT "id" FROM "Invoice" WHERE "id" = $1', [req.params.id]);\n    res.json({ success: true, data: rows[0] });\n  });\n`,
      );
    },
    // With the policies as generated, the route finds nothing; a permissive policy of someone's own lets it through.
    breakData: async (backend) => void (await query(backend.databaseUrl, 'CREATE POLICY "everyone" ON "Invoice" USING (true)')),
    fails: ['tenant-isolation', 'row-level-security'],
    hint: 'caused by row-level-security: authstrap fix repairs row-level-security',
  },
]);

describe.runIf(adminUrl)('tenant-isolation: the messages', () => {
  it('name the collection and what Bob could do', () => {
    expect(byId(stage("the Project list's read without its organization (a generated file edited), and row-level security off").verify, 'tenant-isolation').message).toBe("GET /Projects in Bob's organization lists Alice's record");
    expect(byId(stage("Invoice's read by id without its organization (a generated file edited), and row-level security off").verify, 'tenant-isolation').message).toBe("GET /Invoices/:id of Alice's record in Bob's organization answered 200, not 404");
    expect(byId(stage('an extension route of its own that reads any Invoice by id, under a policy opened up by hand').verify, 'tenant-isolation').message).toBe("GET /Invoices/:id of Alice's record in Bob's organization answered 200, not 404");
  });
});
