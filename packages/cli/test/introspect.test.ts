import { describe, expect, it } from 'vitest';
import { databaseModel } from '../src/generate/table-model.js';
import type { Catalog, CatalogColumn, CatalogTable } from '../src/introspect/catalog.js';
import { baselineModel, entityNameFor, printSchema, schemaFromCatalog } from '../src/introspect/to-schema.js';
import { readSchemaLiteral } from '../src/schema/read-literal.js';
import { validateSchema } from '../src/schema/validate.js';

// The catalog as readCatalog returns it, written by hand: each case is one thing a real database has.
const column = (name: string, type: string, extra: Partial<CatalogColumn> = {}): CatalogColumn => ({
  name, type, enumValues: null, category: 'base', nullable: false, default: null, maxLength: null, comment: null, ...extra,
});
const table = (name: string, extra: Partial<CatalogTable>): CatalogTable => ({
  name, comment: null, columns: [], constraints: [], indexes: [], ...extra,
});
const primaryKey = (tableName: string, ...columns: string[]) => ({ name: `${tableName}_pkey`, kind: 'p' as const, columns, definition: `PRIMARY KEY (${columns.join(', ')})`, references: null });

const catalog: Catalog = {
  tables: [
    table('customers', {
      comment: 'People who pay',
      columns: [
        column('id', 'int8', { default: "nextval('customers_id_seq'::regclass)" }),
        column('email', 'varchar', { maxLength: 320 }),
        column('tier', 'text', { default: "'free'::text" }),
        column('seats', 'int4', { default: '1' }),
        column('active', 'bool', { default: 'true' }),
        column('mood', 'mood', { category: 'enum', enumValues: ['happy', 'sad'], nullable: true }),
        column('tags', '_text', { category: 'other', nullable: true }),
        column('inserted_at', 'timestamptz', { default: 'now()' }),
      ],
      constraints: [
        primaryKey('customers', 'id'),
        { name: 'customers_email_unique', kind: 'u', columns: ['email'], definition: 'UNIQUE (email)', references: null },
        { name: 'customers_tier_check', kind: 'c', columns: ['tier'], definition: "CHECK ((tier = ANY (ARRAY['free'::text, 'paid'::text])))", references: null },
        { name: 'customers_seats_check', kind: 'c', columns: ['seats'], definition: 'CHECK ((seats > 0))', references: null },
      ],
    }),
    table('orders', {
      columns: [
        column('id', 'uuid', { default: 'gen_random_uuid()' }),
        column('customer_id', 'int8', { nullable: true }),
        column('createdAt', 'timestamptz', { default: 'now()' }),
        column('updated_at', 'timestamptz', { default: 'now()' }),
      ],
      constraints: [
        primaryKey('orders', 'id'),
        { name: 'fk_orders_customer', kind: 'f', columns: ['customer_id'], definition: 'FOREIGN KEY (customer_id) REFERENCES customers(id) ON DELETE SET NULL', references: { table: 'customers', columns: ['id'], onDelete: 'set null' } },
      ],
      indexes: [{ name: 'orders_by_customer', columns: ['customer_id'], unique: false, special: false }],
    }),
    table('order_lines', { columns: [column('order_id', 'uuid'), column('line', 'int4')], constraints: [primaryKey('order_lines', 'order_id', 'line')] }),
    table('blobs', { columns: [column('id', 'int4'), column('data', 'bytea')], constraints: [primaryKey('blobs', 'id')] }),
    table('codes', { columns: [column('code', 'text')], constraints: [primaryKey('codes', 'code')] }),
  ],
};

describe('introspection: an existing database as a schema', () => {
  const introspected = schemaFromCatalog(catalog);
  const entity = (name: string) => introspected.entities.find(([entityName]) => entityName === name)?.[1];

  it('names entities in the singular, PascalCase, and avoids the names the generated code uses', () => {
    expect(['users', 'workshop_sessions', 'addresses', 'categories', 'boxes', 'status', 'maps', '2fa_codes'].map(entityNameFor)).toEqual([
      'User', 'WorkshopSession', 'Address', 'Category', 'Box', 'Status', 'MapRecord', 'Table2faCode',
    ]);
  });

  it('maps the key, the timestamps and each column with its type, default, checks and comments', () => {
    expect(entity('Customer')).toEqual({
      table: 'customers',
      idType: 'integer',
      createdAt: 'inserted_at',
      updatedAt: false,
      description: 'People who pay',
      fields: {
        email: { type: 'string', unique: true, maxLength: 320 },
        tier: { type: 'enum', values: ['free', 'paid'], default: 'free' },
        seats: { type: 'integer', min: 1, default: 1 },
        active: { type: 'boolean', default: true },
        mood: { type: 'enum', nullable: true, values: ['happy', 'sad'] },
      },
    });
    expect(entity('Order')).toEqual({
      table: 'orders',
      idType: 'uuid',
      updatedAt: 'updated_at',
      fields: { customerId: { type: 'integer', column: 'customer_id', nullable: true, references: 'Customer', onDelete: 'set null' } },
      indexes: [['customerId']],
    });
  });

  it('leaves out, with the reason, what an entity cannot be', () => {
    expect(introspected.entities.map(([name]) => name)).toEqual(['Customer', 'Order']);
    // Keys first (they decide which tables are entities), then columns, each in table order.
    expect(introspected.notes).toEqual([
      'table "order_lines" is not mapped: its primary key has 2 columns (order_id, line); an entity needs one "id" column. It stays as it is; the app keeps using it.',
      'table "codes" is not mapped: its primary key is "code"; an entity\'s key column must be named "id". It stays as it is; the app keeps using it.',
      'column "customers"."tags" is not mapped (its type _text has no authstrap field type); the API leaves it to its default.',
      'table "blobs" is not mapped: its required column "data" cannot be mapped (its type bytea has no authstrap field type), so the API could not create rows. It stays as it is; the app keeps using it.',
    ]);
  });

  it('prints a schema file that loads and validates as written', () => {
    const source = printSchema(introspected, 'postgresql://u:***@db/app');
    expect(source).toMatch(/^\/\/ Read from the database postgresql:\/\/u:\*\*\*@db\/app/);
    const schema = validateSchema(readSchemaLiteral('authstrap.schema.ts', source));
    expect(schema.auth).toBe(false);
    expect(schema.entities.map((e) => [e.name, e.table, e.idType])).toEqual([['Customer', 'customers', 'integer'], ['Order', 'orders', 'uuid']]);
  });

  it('starts the migrations from the names the database really has, and without what it lacks', () => {
    const schema = validateSchema(readSchemaLiteral('authstrap.schema.ts', printSchema(introspected, 'db')));
    const model = databaseModel(schema);
    const baseline = baselineModel(model, catalog);
    const customers = baseline.tables.find((t) => t.name === 'customers')!;
    // UNIQUE (email) is named as in the database; authstrap's own name would not be found to drop.
    expect(customers.constraints.map((c) => c.name)).toEqual(['customers_email_unique', 'customers_tier_check']);
    const orders = baseline.tables.find((t) => t.name === 'orders')!;
    expect(orders.constraints.map((c) => c.name)).toEqual(['fk_orders_customer']);
    expect(orders.indexes.map((i) => i.name)).toEqual(['orders_by_customer']);
    // The model's columns are kept as they are: the first migration changes no existing column.
    expect(customers.columns).toEqual(model.tables.find((t) => t.name === 'customers')!.columns);
  });
});
