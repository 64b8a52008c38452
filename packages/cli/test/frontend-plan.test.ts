import { describe, expect, it } from 'vitest';
import { frontendEnvEntries, mergeEnvLocal, planNewFrontend, withAuthDependencies } from '../src/frontend/plan.js';
import { loadFrontendTemplates } from '../src/frontend/templates.js';
import { frontendEntityView, pageEntity } from '../src/frontend/view.js';
import { validateSchema } from '../src/schema/validate.js';

/** The pure half of `setup --frontend`: what it writes, from the schema and the backend's settings. */

const backend = { url: 'http://localhost:3000', authSecret: 'a'.repeat(32), serviceApiKey: 'k'.repeat(43), relativeDir: '../api' };
const entries = frontendEnvEntries({ port: 3001, backend });

describe('.env.local', () => {
  it('gets every key in a new file, and a second merge changes nothing', () => {
    const created = mergeEnvLocal('', entries, '../api');
    for (const [key, value] of entries) expect(created).toContain(`\n${key}=${value}\n`);
    expect(mergeEnvLocal(created, entries, '../api')).toBe(created);
  });

  it("keeps the app's own keys and values, and adds only the missing ones", () => {
    const before = 'NEXT_PUBLIC_SITE_NAME=Mine\nBETTER_AUTH_URL=https://app.example.com\n';
    const after = mergeEnvLocal(before, entries, '../api');
    expect(after.startsWith(before)).toBe(true);
    expect(after.match(/^BETTER_AUTH_URL=/gm)).toHaveLength(1);
    expect(after).toContain('AUTHSTRAP_URL=http://localhost:3000');
  });

  it("follows the backend's new secrets while pointed at it, and leaves an app pointed elsewhere alone", () => {
    const stale = mergeEnvLocal('', frontendEnvEntries({ port: 3001, backend: { ...backend, authSecret: 'old'.repeat(11) } }), '../api');
    const renewed = mergeEnvLocal(stale, entries, '../api');
    expect(renewed).toContain(`AUTH_SECRET=${backend.authSecret}\n`);
    expect(renewed).not.toContain('oldold');
    expect(renewed.split('\n')).toHaveLength(stale.split('\n').length);

    const elsewhere = 'AUTHSTRAP_URL=https://api.example.com\nAUTH_SECRET=production-secret\n';
    expect(mergeEnvLocal(elsewhere, entries, '../api')).toContain('AUTH_SECRET=production-secret\n');
  });
});

describe('package.json of an existing app', () => {
  it('gains Better Auth and the adapter in sorted dependencies, keeping its indentation; a second pass is a no-op', () => {
    const before = '{\n    "name": "web",\n    "dependencies": { "react": "19.3.1", "next": "16.4.6" }\n}\n';
    const after = withAuthDependencies(before, '^2.0.2');
    expect(JSON.parse(after).dependencies).toEqual({ '@authstrap/better-auth-adapter': '^2.0.2', 'better-auth': '^1.7.25', next: '16.4.6', react: '19.3.1' });
    expect(Object.keys(JSON.parse(after).dependencies)[0]).toBe('@authstrap/better-auth-adapter');
    expect(after).toContain('\n    "name": "web"');
    expect(withAuthDependencies(after, '^2.0.2')).toBe(after);
  });

  it('leaves a Better Auth the app already has at its version', () => {
    const before = '{\n  "dependencies": { "better-auth": "1.7.0", "next": "16.4.6" }\n}\n';
    expect(JSON.parse(withAuthDependencies(before, '^2.0.2')).dependencies['better-auth']).toBe('1.7.0');
  });
});

describe('the data page', () => {
  const schema = validateSchema({
    entities: {
      Team: { tenantScoped: false, fields: { name: { type: 'string' } } },
      Invoice: {
        fields: {
          number: { type: 'string', minLength: 3 },
          memo: { type: 'text', nullable: true },
          total: { type: 'integer' },
          paid: { type: 'boolean', default: false },
          dueAt: { type: 'datetime', nullable: true },
          state: { type: 'enum', values: ['draft', 'sent'], default: 'draft' },
          customerId: { type: 'uuid', nullable: true },
          extra: { type: 'json', nullable: true },
        },
      },
      InvoiceLine: { parent: 'invoiceId', fields: { invoiceId: { type: 'uuid', references: 'Invoice' } } },
    },
  });

  it("shows the first tenant-scoped, top-level entity of the schema's own", () => {
    expect(pageEntity(schema)?.name).toBe('Invoice');
    expect(pageEntity(validateSchema({ entities: { Team: { tenantScoped: false, fields: {} } } }))).toBeUndefined();
  });

  it('has a form input per field a person types, required unless nullable or defaulted', () => {
    const view = frontendEntityView(pageEntity(schema)!);
    expect(view).toMatchObject({ route: 'invoices', label: 'Invoices', fileBase: 'invoice' });
    expect(view.formFields.map((field) => [field.name, field.input, field.required])).toEqual([
      ['number', 'text', true],
      ['memo', 'text', false],
      ['total', 'number', true],
      ['paid', 'checkbox', false],
      ['dueAt', 'datetime-local', false],
      ['state', 'select', false],
    ]);
    const assign = Object.fromEntries(view.formFields.map((field) => [field.name, field.assign]));
    expect(assign.number).toBe("number: String(form.get('number'))");
    expect(assign.memo).toBe("...(form.get('memo') ? { memo: String(form.get('memo')) } : {})");
    expect(assign.total).toBe("total: Number(form.get('total'))");
    expect(assign.paid).toBe("paid: form.get('paid') === 'on'");
    expect(assign.state).toContain("as InvoiceCreateInput['state']");
    expect(view.columns.map((column) => column.label)).toEqual(['Number', 'Memo', 'Total', 'Paid', 'Created at']);
  });

  it('renders a new app around it: its route, its panel, no template names left', () => {
    const files = planNewFrontend(schema, loadFrontendTemplates(), { packageName: 'billing-web', port: 3001, backend, adapterDependency: '^2.0.2' });
    const paths = files.map((file) => file.path);
    expect(paths).toContain('src/app/invoices/page.tsx');
    expect(paths).toContain('src/components/invoice-panel.tsx');
    expect(paths).toContain('src/app/api/auth/[...all]/route.ts');
    expect(paths).toContain('.gitignore');
    expect(paths.filter((file) => /_entity|\.hbs$|_gitignore/.test(file))).toEqual([]);
    // A Handlebars tag left over (JSX object literals, `{{ a, b }}`, start with a space).
    for (const file of files) expect(file.after, file.path).not.toMatch(/\{\{[#/^]?[\w.@]/);
    expect(JSON.parse(files.find((file) => file.path === 'package.json')!.after)).toMatchObject({ name: 'billing-web', scripts: { dev: 'next dev --port 3001' } });
  });
});
