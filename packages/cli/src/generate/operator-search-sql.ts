/**
 * The indexes the operators' searches use (the backend's src/operator/search-indexes.ts). A search
 * matches part of an address, name or slug (ILIKE '%…%'), which no b-tree serves: without them
 * every search reads every user and every organization (117 ms p95 for a user and 264 ms for an
 * organization at 100,000 users; bench/README.md). pg_trgm's GIN indexes serve exactly that.
 *
 * pg_trgm ships with PostgreSQL (contrib) and is trusted since PostgreSQL 13: the database's owner
 * may create it (the embedded database loads it, src/db/database.ts). Where it is missing or
 * refused (a managed database without contrib, a role without CREATE on the database), the
 * migration goes on without the indexes and the searches read every row, as before: slower, the
 * same answers. The backend says so in its log when it starts.
 */

/** The indexes, by name: the table and the column each serves. The backend lists the same names. */
export const operatorSearchIndexes = [
  { name: 'User_email_trgm_idx', table: 'User', column: 'email' },
  { name: 'User_name_trgm_idx', table: 'User', column: 'name' },
  { name: 'Organization_name_trgm_idx', table: 'Organization', column: 'name' },
  { name: 'Organization_slug_trgm_idx', table: 'Organization', column: 'slug' },
];

/**
 * One statement of the migration: pg_trgm, then each index, its operator class named in the schema
 * the extension is in (a managed database may keep extensions in a schema of their own). A refusal
 * to create the extension is a notice, not a failure: the migration's other statements stand.
 */
const createSearchIndexes = `DO $$
DECLARE
  trgm_schema text;
BEGIN
  BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
  EXCEPTION WHEN insufficient_privilege OR undefined_file OR undefined_object OR feature_not_supported THEN
    RAISE NOTICE 'pg_trgm could not be created (%): the operators'' searches read every row (docs/operator.md, "Search")', SQLERRM;
    RETURN;
  END;
  SELECT n.nspname INTO trgm_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
${operatorSearchIndexes.map(({ name, table, column }) => `  EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING gin (%I %I.gin_trgm_ops)', '${name}', '${table}', '${column}', trgm_schema);`).join('\n')}
END
$$;`;

/** As the model's functions are: emitted by the first migration, and again whenever its text changes. */
export const operatorSearchStatements = [{ name: 'operator_search_indexes', definition: createSearchIndexes }];
