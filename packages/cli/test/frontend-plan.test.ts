import { describe, expect, it } from 'vitest';
import { frontendEnvEntries, mergeEnvLocal, permissionEntities, planExistingFrontend, planNewFrontend, withAuthDependencies, type ExistingApp } from '../src/frontend/plan.js';
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
    expect(JSON.parse(after).dependencies).toEqual({ '@authstrap/better-auth-adapter': '^2.0.2', '@radix-ui/react-alert-dialog': '^1.2.1', 'better-auth': '^1.7.25', next: '16.4.6', react: '19.3.1' });
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

  it("fills the edit form from the record, and empties a nullable field with null; a row is named by its first required text", () => {
    const view = frontendEntityView(pageEntity(schema)!);
    const initial = Object.fromEntries(view.formFields.map((field) => [field.name, field.initial]));
    expect(initial.number).toBe("defaultValue={record?.number ?? ''}");
    expect(initial.paid).toBe('defaultChecked={record?.paid ?? false}');
    expect(initial.dueAt).toBe('defaultValue={dateTimeInputValue(record?.dueAt)}');
    expect(view.hasDateTime).toBe(true);
    expect(view.formFields.filter((field) => field.clearable).map((field) => field.name)).toEqual(['memo', 'dueAt']);
    expect(view.rowName).toBe('row.number');
    const unnamed = frontendEntityView(pageEntity(validateSchema({ entities: { Reading: { fields: { value: { type: 'number' } } } } }))!);
    expect(unnamed.rowName).toBe('String(row.id)');
    expect(unnamed.hasDateTime).toBe(false);
  });

  it('renders a new app around it: its route, its panel, no template names left', () => {
    const files = planNewFrontend(schema, loadFrontendTemplates(), { packageName: 'billing-web', port: 3001, backend, adapterDependency: '^2.0.2', permissionEntities: permissionEntities(schema) });
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

  it("follows the entity's live stream when its changes are events, and only reads it when they are not (events: false)", () => {
    const options = { packageName: 'billing-web', port: 3001, backend, adapterDependency: '^2.0.2', permissionEntities: permissionEntities(schema) };
    const panel = (of: typeof schema) => planNewFrontend(of, loadFrontendTemplates(), options).find((file) => file.path === 'src/components/invoice-panel.tsx')!.after;
    const live = panel(schema);
    expect(live).toContain('subscribe: (options) => api.Invoice.subscribe(options),');
    expect(live).toContain('<LiveIndicator status={list.status} />');
    const quiet = panel(validateSchema({ entities: { Invoice: { events: false, fields: { number: { type: 'string' } } } } }));
    expect(quiet).not.toContain('subscribe');
    expect(quiet).not.toContain('LiveIndicator');
    expect(quiet).toContain('api.Invoice.list(');
  });
});

describe('the team console', () => {
  const schema = validateSchema({
    entities: {
      Team: { tenantScoped: false, fields: { name: { type: 'string' } } },
      Invoice: { fields: { number: { type: 'string' } } },
      InvoiceLine: { parent: 'invoiceId', fields: { invoiceId: { type: 'uuid', references: 'Invoice' } } },
    },
  });
  const templates = loadFrontendTemplates();
  const options = { packageName: 'billing-web', port: 3001, backend, adapterDependency: '^2.0.2', permissionEntities: permissionEntities(schema) };
  const consolePages = ['app/settings/api-keys/page.tsx', 'app/settings/audit-log/page.tsx', 'app/settings/directory/page.tsx', 'app/settings/domains/page.tsx', 'app/settings/general/page.tsx', 'app/settings/invitations/page.tsx', 'app/settings/layout.tsx', 'app/settings/members/page.tsx', 'app/settings/page.tsx', 'app/settings/webhooks/page.tsx', 'app/account/security/page.tsx'];

  it("offers API-key permissions on the schema's tenant-scoped entities, child entities included, not on the shared ones", () => {
    expect(permissionEntities(schema)).toEqual([
      { name: 'Invoice', label: 'Invoices' },
      { name: 'InvoiceLine', label: 'Invoice Lines' },
    ]);
    const page = planNewFrontend(schema, templates, options).find((file) => file.path === 'src/components/settings/api-keys.tsx')!;
    expect(page.after).toContain("{ name: 'Invoice', label: 'Invoices' },\n  { name: 'InvoiceLine', label: 'Invoice Lines' },");
    expect(page.after).not.toContain('Team');
  });

  it('a new app has the settings pages, and an existing app gains the same pages next to its app/ folder', () => {
    const created = planNewFrontend(schema, templates, options).map((file) => file.path);
    for (const page of consolePages) expect(created).toContain(`src/${page}`);

    const app: ExistingApp = { sourceRoot: 'src', packageJsonText: '{\n  "dependencies": { "next": "16.4.6" }\n}\n', files: {} };
    const { changes, kept } = planExistingFrontend(app, templates, options);
    const paths = changes.map((change) => change.path);
    for (const page of consolePages) expect(paths).toContain(`src/${page}`);
    for (const file of ['src/components/settings/members.tsx', 'src/components/settings/webhooks.tsx', 'src/components/ui/confirm-dialog.tsx', 'src/components/ui/pager.tsx', 'src/components/organization-provider.tsx', 'src/components/account-security.tsx']) expect(paths).toContain(file);
    // The account page itself is the app's own: an existing app gets the security page beside it, not a new one.
    expect(paths).not.toContain('src/app/account/page.tsx');
    // Rendered, as in a new app: the same text, the schema's entities in the API keys page.
    const newApp = new Map(planNewFrontend(schema, templates, options).map((file) => [file.path, file.after]));
    for (const change of changes.filter((change) => change.path.includes('/settings/'))) expect(change.after, change.path).toBe(newApp.get(change.path));
    expect(kept).toEqual([]);
    expect(JSON.parse(changes.find((change) => change.path === 'package.json')!.after).dependencies).toHaveProperty('@radix-ui/react-alert-dialog');
  });

  it("keeps a settings page of the app's own, and says so; a second pass adds nothing", () => {
    const mine = 'export default function Members() { return null; }\n';
    const app: ExistingApp = { sourceRoot: '', packageJsonText: '{ "dependencies": { "next": "16.4.6" } }\n', files: { 'app/settings/members/page.tsx': mine } };
    const first = planExistingFrontend(app, templates, options);
    expect(first.kept).toEqual(['app/settings/members/page.tsx']);
    expect(first.changes.map((change) => change.path)).not.toContain('app/settings/members/page.tsx');
    const written = Object.fromEntries(first.changes.map((change) => [change.path, change.after]));
    const again = planExistingFrontend({ ...app, packageJsonText: written['package.json']!, files: { ...app.files, ...written } }, templates, options);
    expect(again.changes).toEqual([]);
  });
});
