import { describe, expect, it } from 'vitest';
import { planSchemaEdit } from '../src/add-auth/schema-edit.js';
import { readSchemaLiteral } from '../src/schema/read-literal.js';
import { validateSchema } from '../src/schema/validate.js';

const schemaWith = (entities: string, auth = 'false') => `// The model.\nexport default {\n  auth: ${auth}, // off for now\n  entities: {\n${entities}\n  },\n};\n`;
const entity = (name: string, extra = '') => `    ${name}: {${extra}\n      fields: { title: { type: 'string' } },\n    },`;

describe('add-auth: the schema edit', () => {
  it.each([
    ['Account', 'AppAccount'],
    ['accounts', 'AppAccount'],
    ['Session', 'AppSession'],
    ['sessions', 'AppSession'],
    ['SESSIONS', 'AppSESSION'],
    ['user', 'AppUser'],
    ['users', 'AppUser'],
    ['Users', 'AppUser'],
    ['Verification', 'AppVerification'],
    ['verifications', 'AppVerification'],
    ['organization', 'AppOrganization'],
    ['Members', 'AppMember'],
  ])('renames %s (a clash with an auth entity, whatever its case) to %s, keeping its table', (name, renamed) => {
    const plan = planSchemaEdit(schemaWith(entity(name)));
    expect(plan.renames).toEqual([{ from: name, to: renamed, table: name }]);
    expect(plan.after).toContain(`    ${renamed}: {\n      table: '${name}',\n      fields:`);
    // The result is a valid schema with auth on.
    const schema = validateSchema(readSchemaLiteral('authstrap.schema.ts', plan.after));
    expect(schema.auth).toBe(true);
    expect(schema.entities.find((candidate) => candidate.name === renamed)?.table).toBe(name);
  });

  it('renames an entity whose plural or path clashes, and drops the clashing plural', () => {
    const plan = planSchemaEdit(schemaWith(entity('Workshop', " plural: 'sessions',")));
    expect(plan.renames.map((rename) => rename.to)).toEqual(['AppWorkshop']);
    expect(plan.after).not.toContain("plural: 'sessions'");
  });

  it('leaves names that do not clash alone, and keeps an explicit table', () => {
    const source = schemaWith(`${entity('Invoice')}\n${entity('users', " table: 'legacy_users',")}`);
    const plan = planSchemaEdit(source);
    expect(plan.renames).toEqual([{ from: 'users', to: 'AppUser', table: 'legacy_users' }]);
    expect(plan.after.match(/table: 'legacy_users'/g)).toHaveLength(1);
    expect(plan.after).toContain('    Invoice: {');
  });

  it('uses --rename when given, and never picks a name that is taken', () => {
    expect(planSchemaEdit(schemaWith(entity('Account')), { renames: { Account: 'BillingAccount' } }).renames[0]!.to).toBe('BillingAccount');
    const taken = planSchemaEdit(schemaWith(`${entity('AppAccount')}\n${entity('Account')}`));
    expect(taken.renames).toEqual([{ from: 'Account', to: 'AppAccount2', table: 'Account' }]);
  });

  it('points every reference at the new name', () => {
    const source = schemaWith(`${entity('Account')}\n    Invoice: {\n      fields: { accountId: { type: 'uuid', references: 'Account' }, otherId: { type: 'uuid', references: 'Invoice', nullable: true } },\n    },`);
    const plan = planSchemaEdit(source);
    expect(plan.after).toContain("accountId: { type: 'uuid', references: 'AppAccount' }");
    expect(plan.after).toContain("references: 'Invoice'");
  });

  it('keeps every comment and every untouched line exactly as it was', () => {
    const source = schemaWith(`    /** Billing, not login. */\n    Account: {\n      // the tier\n      fields: { plan: { type: 'enum', values: ['free', 'pro'] } }, // trailing\n    },`);
    const plan = planSchemaEdit(source);
    for (const comment of ['// The model.', '// off for now', '/** Billing, not login. */', '// the tier', '// trailing']) expect(plan.after).toContain(comment);
    const changed = plan.after.split('\n').filter((line) => !source.split('\n').includes(line));
    expect(changed).toEqual(['  auth: true, // off for now', '    AppAccount: {', "      table: 'Account',"]);
  });

  it('turns auth on only when it was off, and a second edit changes nothing', () => {
    const plan = planSchemaEdit(schemaWith(entity('Account')));
    expect(plan.authWasOn).toBe(false);
    const again = planSchemaEdit(plan.after);
    expect(again.after).toBe(plan.after);
    expect(again.renames).toEqual([]);
    expect(again.authWasOn).toBe(true);
    const withoutKey = "export default { entities: { Project: { fields: {} } } };\n";
    expect(planSchemaEdit(withoutKey).after).toBe(withoutKey);
  });

  it('reports a table named exactly like an auth table, which no rename can free', () => {
    const plan = planSchemaEdit(schemaWith(entity('Billing', " table: 'account',")));
    expect(plan.problems).toEqual(['entity "Billing" uses the table "account", which the auth entities need; rename that table first']);
  });
});
