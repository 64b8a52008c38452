import type pg from 'pg';

/**
 * What `authstrap add-auth` reads of an existing database: the tables of the `public` schema,
 * their columns, keys, references, checks and indexes, as PostgreSQL's catalog describes them.
 * Plain data, so that turning it into a schema (to-schema.ts) is a pure function with tests.
 */

export interface CatalogColumn {
  name: string;
  /** The type's name in pg_type: int4, int8, text, varchar, timestamptz, uuid, a user enum's name, ... */
  type: string;
  /** Labels of a user-defined enum type; null for other types. */
  enumValues: string[] | null;
  /** The element type of an array (`_text`), a domain or composite: not mapped. */
  category: 'base' | 'enum' | 'other';
  nullable: boolean;
  /** The default as SQL (`nextval('users_id_seq'::regclass)`, `'open'::text`, `now()`). */
  default: string | null;
  /** varchar(n) / char(n): n. */
  maxLength: number | null;
  comment: string | null;
}

/** Constraint kinds as in pg_constraint.contype: primary key, foreign key, unique, check. */
export type ConstraintKind = 'p' | 'f' | 'u' | 'c';

export interface CatalogConstraint {
  name: string;
  kind: ConstraintKind;
  columns: string[];
  /** pg_get_constraintdef: `CHECK ((capacity > 0))`, `FOREIGN KEY (user_id) REFERENCES users(id)`. */
  definition: string;
  references: { table: string; columns: string[]; onDelete: 'cascade' | 'restrict' | 'set null' | 'no action' | 'set default' } | null;
}

/** An index that no constraint owns (those come with the constraint). */
export interface CatalogIndex {
  name: string;
  columns: string[];
  unique: boolean;
  /** Partial (WHERE ...) or on an expression: not expressible in a schema. */
  special: boolean;
}

export interface CatalogTable {
  name: string;
  comment: string | null;
  columns: CatalogColumn[];
  constraints: CatalogConstraint[];
  indexes: CatalogIndex[];
}

export interface Catalog {
  tables: CatalogTable[];
}

const onDeleteActions = { a: 'no action', r: 'restrict', c: 'cascade', n: 'set null', d: 'set default' } as const;

/** Reads the catalog in four queries. Names are cast to text so that `pg` hands back plain strings. */
export async function readCatalog(client: Pick<pg.Client, 'query'>): Promise<Catalog> {
  const { rows: tables } = await client.query<{ oid: number; name: string; comment: string | null }>(
    `SELECT c.oid::int AS oid, c.relname::text AS name, obj_description(c.oid, 'pg_class') AS comment
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      ORDER BY c.relname`,
  );
  const oids = tables.map((table) => table.oid);

  const { rows: columns } = await client.query<{
    table_oid: number; name: string; type: string; category: CatalogColumn['category']; enum_values: string[] | null;
    nullable: boolean; default: string | null; max_length: number | null; comment: string | null;
  }>(
    `SELECT a.attrelid::int AS table_oid, a.attname::text AS name, t.typname::text AS type,
            CASE WHEN t.typtype = 'e' THEN 'enum' WHEN t.typtype = 'b' AND t.typcategory <> 'A' THEN 'base' ELSE 'other' END AS category,
            CASE WHEN t.typtype = 'e' THEN ARRAY(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) END AS enum_values,
            NOT a.attnotnull AS nullable, pg_get_expr(d.adbin, d.adrelid) AS default,
            CASE WHEN t.typname IN ('varchar', 'bpchar') AND a.atttypmod > 4 THEN a.atttypmod - 4 END AS max_length,
            col_description(a.attrelid, a.attnum) AS comment
       FROM pg_attribute a
       JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attrelid, a.attnum`,
    [oids],
  );

  const { rows: constraints } = await client.query<{
    table_oid: number; name: string; kind: ConstraintKind; columns: string[]; definition: string;
    target_table: string | null; target_columns: string[]; on_delete: keyof typeof onDeleteActions;
  }>(
    `SELECT con.conrelid::int AS table_oid, con.conname::text AS name, con.contype::text AS kind,
            ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(num, ord)
                    JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY k.ord) AS columns,
            pg_get_constraintdef(con.oid) AS definition,
            target.relname::text AS target_table,
            ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY k(num, ord)
                    JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num ORDER BY k.ord) AS target_columns,
            con.confdeltype::text AS on_delete
       FROM pg_constraint con
       LEFT JOIN pg_class target ON target.oid = con.confrelid
      WHERE con.conrelid = ANY($1::oid[]) AND con.contype IN ('p', 'f', 'u', 'c')
      ORDER BY con.conname`,
    [oids],
  );

  const { rows: indexes } = await client.query<{ table_oid: number; name: string; columns: string[]; unique: boolean; special: boolean }>(
    `SELECT i.indrelid::int AS table_oid, ic.relname::text AS name, i.indisunique AS unique,
            (i.indpred IS NOT NULL OR i.indexprs IS NOT NULL) AS special,
            ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(num, ord)
                    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num ORDER BY k.ord) AS columns
       FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
      WHERE i.indrelid = ANY($1::oid[])
        AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conrelid = i.indrelid AND con.conindid = i.indexrelid)
      ORDER BY ic.relname`,
    [oids],
  );

  return {
    tables: tables.map((table) => ({
      name: table.name,
      comment: table.comment,
      columns: columns
        .filter((column) => column.table_oid === table.oid)
        .map((column) => ({
          name: column.name,
          type: column.type,
          enumValues: column.enum_values,
          category: column.category,
          nullable: column.nullable,
          default: column.default,
          maxLength: column.max_length,
          comment: column.comment,
        })),
      constraints: constraints
        .filter((constraint) => constraint.table_oid === table.oid)
        .map((constraint) => ({
          name: constraint.name,
          kind: constraint.kind,
          columns: constraint.columns,
          definition: constraint.definition,
          references:
            constraint.kind === 'f' && constraint.target_table
              ? { table: constraint.target_table, columns: constraint.target_columns, onDelete: onDeleteActions[constraint.on_delete] }
              : null,
        })),
      indexes: indexes
        .filter((index) => index.table_oid === table.oid)
        .map((index) => ({ name: index.name, columns: index.columns, unique: index.unique, special: index.special })),
    })),
  };
}
