import { randomUUID } from 'node:crypto';
import type { BetterAuthOptions } from 'better-auth';
import * as betterAuthContext from '@better-auth/core/context';
import { createAdapterFactory, type AdapterFactoryConfig, type AdapterFactoryCustomizeAdapterCreator, type CustomAdapter, type DBTransactionAdapter } from 'better-auth/adapters';
import { collectionPathOf, entityNameOf, fromBackendRecord, toBackendField, toBackendRecord } from './models.js';
import { betterAuthSchema } from './schema.js';
import { restClient, type RestClient, type RestClientOptions } from './rest.js';

export interface AuthstrapAdapterOptions extends RestClientOptions {
  /** Log each call of the adapter (Better Auth's adapter debug logs). */
  debugLogs?: boolean;
  /**
   * A user Better Auth creates also gets an organization of their own, with them as owner, as a
   * sign-up on the backend does: without one, every tenant-scoped route is closed to them. Turn it
   * off when Better Auth's organization plugin manages organizations. Default true.
   */
  personalOrganization?: boolean;
  /**
   * Better Auth's transactions (a sign-up's user, account and session; an organization with its
   * owner) are transactions of the backend: opened, used and committed over HTTP, so a flow that
   * fails half-way leaves nothing behind. The backend bounds them (SERVICE_TRANSACTION_*,
   * docs/better-auth.md). Default true; false sends each write on its own, as before.
   */
  transactions?: boolean;
}

/** Only the fields Better Auth selected (and the related records it joined), when it selected any. */
const selected =
  (select: string[] | undefined, join: JoinConfig | undefined) =>
  (record: Record<string, unknown>): Record<string, unknown> => {
    if (!select?.length) return record;
    const kept = new Set([...select, ...Object.keys(join ?? {})]);
    return Object.fromEntries(Object.entries(record).filter(([field]) => kept.has(field)));
  };

/**
 * Whether a where looks a session up by a token shaped like a SHA-256 (64 hex digits). The
 * backend keeps only that hash of its own sessions' tokens; such a value is never a token Better
 * Auth issued (its tokens are 32 letters and digits), so it must not find a session: otherwise a
 * hash read from a database leak would sign in (e.g. as a Bearer through the bearer plugin).
 */
function looksUpStoredHash(model: string, where: CleanedWhere[] | undefined): boolean {
  return model === 'session' && (where ?? []).some((clause) => clause.field === 'token' && typeof clause.value === 'string' && /^[0-9a-f]{64}$/.test(clause.value));
}

/**
 * The Better Auth endpoint that is writing (`/sign-in/email`, `/magic-link/verify`), sent with
 * every write: the backend names the method of a session it keeps by it, which its sign-in rule
 * judges (an organization that requires single sign-on refuses the others). Nothing when Better
 * Auth writes outside an endpoint (a script calling the adapter), which the backend takes as such.
 */
function endpointPathHeader(): Record<string, string> {
  // Better Auth 1.7.5 and newer name the endpoint; before, nothing is sent.
  const path = betterAuthContext.tryGetCurrentAuthEndpointContext?.()?.path;
  return typeof path === 'string' ? { 'x-authstrap-better-auth-path': path } : {};
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The most rows the backend returns in one page. */
const backendPageSize = 100;

type CleanedWhere = Parameters<CustomAdapter['findOne']>[0]['where'][number];
type JoinConfig = NonNullable<Parameters<CustomAdapter['findOne']>[0]['join']>;

/**
 * Better Auth's database, kept in an authstrap backend: every call is one request (or, for lists
 * longer than a page, one per 100 rows) to the backend's entity routes with the service key, and
 * every filter, sort, limit, offset and count is done by the backend in SQL. Nothing here reads a
 * whole table.
 *
 *   betterAuth({
 *     database: authstrapAdapter({ baseUrl: process.env.AUTHSTRAP_URL, serviceKey: process.env.SERVICE_API_KEY }),
 *     emailAndPassword: { enabled: true, password: authstrapPassword() },
 *   })
 */
export function authstrapAdapter(options: AuthstrapAdapterOptions) {
  /** Better Auth's options, once it has called the adapter with them: a transaction's adapter needs them too. */
  let betterAuthOptions: BetterAuthOptions | undefined;

  /** Runs `work` with an adapter whose every request is in one backend transaction; commits unless it throws. */
  const transaction = async <R>(work: (adapter: DBTransactionAdapter) => Promise<R>): Promise<R> => {
    const inTransaction = restClient(options, randomUUID(), endpointPathHeader);
    await inTransaction.begin();
    const adapter = createAdapterFactory({ config: { ...config, transaction: false }, adapter: adapterOn(inTransaction) })(betterAuthOptions!);
    let result: R;
    try {
      result = await work(adapter);
    } catch (error) {
      // Nothing to keep; a transaction the backend already ended is rolled back there.
      await inTransaction.rollback().catch(() => {});
      throw error;
    }
    await inTransaction.commit();
    return result;
  };

  const config: AdapterFactoryConfig = {
    adapterId: 'authstrap',
    adapterName: 'authstrap REST',
    usePlural: false,
    debugLogs: options.debugLogs ?? false,
    // The backend's ids are uuids; Better Auth's own are not.
    supportsNumericIds: false,
    supportsUUIDs: true,
    customIdGenerator: () => randomUUID(),
    // JSON answers carry dates as ISO strings: Better Auth turns them back into Dates.
    supportsDates: false,
    supportsBooleans: true,
    supportsJSON: true,
    supportsArrays: false,
    transaction: options.transactions === false ? false : transaction,
  };

  const factory = createAdapterFactory({ config, adapter: adapterOn(restClient(options, undefined, endpointPathHeader)) });
  return (betterAuth: BetterAuthOptions) => {
    betterAuthOptions = betterAuth;
    return factory(betterAuth);
  };

  /** The adapter's calls, each a request of `rest` (in a transaction when `rest` is one's). */
  function adapterOn(rest: RestClient): AdapterFactoryCustomizeAdapterCreator {
    return ({ getDefaultModelName, getDefaultFieldName, getFieldName, getFieldAttributes }) => {
      // Better Auth hands the adapter its database names: a `modelName` or `fieldName` its options
      // may have customised (`users`, `email_address`). The backend knows Better Auth's own keys
      // (`user`, `email`), so its tables stay the same whatever the options call them.
      const attempt = <T>(map: () => T, fallback: T): T => {
        try {
          return map();
        } catch {
          return fallback;
        }
      };
      const modelKeyOf = (model: string) => attempt(() => getDefaultModelName(model), model);
      const fieldKeyOf = (model: string, field: string) => attempt(() => getDefaultFieldName({ model: modelKeyOf(model), field }), field);
      /** A Better Auth field, by its database name, as the backend names it. */
      const backendField = (model: string, field: string) => toBackendField(modelKeyOf(model), fieldKeyOf(model, field));
      /** A record for the backend. */
      const backendRecord = (model: string, record: Record<string, unknown>) => {
        const keyed: Record<string, unknown> = {};
        for (const [field, value] of Object.entries(record)) keyed[fieldKeyOf(model, field)] = value;
        return toBackendRecord(modelKeyOf(model), keyed);
      };
      /** Better Auth's `select` (its field keys) in the database names the records carry. */
      const selectedFields = (model: string, select: string[] | undefined) =>
        select?.map((field) => attempt(() => getFieldName({ model: modelKeyOf(model), field }), field));
      /** A record from the backend with Better Auth's database names. */
      const betterAuthRecord = (model: string, record: Record<string, unknown>) => {
        const renamed: Record<string, unknown> = {};
        for (const [key, value] of Object.entries(fromBackendRecord(modelKeyOf(model), record))) {
          renamed[attempt(() => getFieldName({ model: modelKeyOf(model), field: key }), key)] = value;
        }
        return renamed;
      };

      /** Whether a field holds an id: the id itself, or a reference to another model (uuids here). */
      const isIdField = (model: string, field: string) =>
        field === 'id' || attempt(() => getFieldAttributes({ model: modelKeyOf(model), field }).references?.field === 'id', false);
      /**
       * Every id here is a uuid, and the backend refuses a where that compares an id with anything
       * else (400). Better Auth looks records up by ids it did not make (a token, a made-up id in
       * its tests), which simply match nothing: `eq` one is a clause that cannot hold, `in` drops
       * the values that are not uuids, `ne`/`not_in` them always hold. Returns the clauses to
       * send, or 'nothing' when no record can match.
       */
      const withUuidIds = (model: string, where: CleanedWhere[] | undefined): CleanedWhere[] | 'nothing' => {
        /** A clause as sent, or whether it always or never holds. */
        const settle = (clause: CleanedWhere): CleanedWhere | boolean => {
          if (!isIdField(model, clause.field)) return clause;
          const values: unknown[] = Array.isArray(clause.value) ? clause.value : [clause.value];
          const uuids = values.filter((value) => typeof value !== 'string' || uuidPattern.test(value));
          if (uuids.length === values.length) return clause;
          switch (clause.operator ?? 'eq') {
            case 'in':
              return uuids.length > 0 ? { ...clause, value: uuids as never } : false;
            case 'not_in':
              return uuids.length > 0 ? { ...clause, value: uuids as never } : true;
            case 'ne':
              return true;
            default:
              return false;
          }
        };
        const and: CleanedWhere[] = [];
        const or: CleanedWhere[] = [];
        let hasOr = false;
        let orHolds = false;
        for (const clause of where ?? []) {
          const settled = settle(clause);
          if (clause.connector === 'OR') {
            hasOr = true;
            if (settled === true) orHolds = true;
            else if (settled !== false) or.push(settled);
          } else if (settled === false) return 'nothing';
          else if (settled !== true) and.push(settled);
        }
        if (orHolds || !hasOr) return and;
        return or.length > 0 ? [...and, ...or] : 'nothing';
      };

      /** The backend's `where` parameter: Better Auth's clauses with the backend's field names. */
      const whereQuery = (model: string, where: CleanedWhere[] | undefined): Record<string, string> => ({
        where: JSON.stringify(
          (where ?? []).map((clause) => ({
            field: backendField(model, clause.field),
            operator: clause.operator,
            value: clause.value,
            connector: clause.connector,
            mode: clause.mode,
          })),
        ),
      });
      /** A write by filter; no clause at all means every row, which the backend takes only as `all=true`. */
      const writeFilter = (model: string, where: CleanedWhere[]): Record<string, string> =>
        where.length > 0 ? whereQuery(model, where) : { all: 'true' };
      const pathOf = (model: string) => collectionPathOf(modelKeyOf(model));
      /** The id a where names, when it names exactly one record by id and nothing else. */
      const idOnly = (where: CleanedWhere[]) =>
        where.length === 1 && where[0]!.field === 'id' && where[0]!.operator === 'eq' && typeof where[0]!.value === 'string' && uuidPattern.test(where[0]!.value) ? where[0]!.value : undefined;

      /**
       * The backend's `join` parameter: each related model Better Auth asks for is embedded in
       * the rows by the backend, in the same statement (Better Auth's `advanced.database.joins`).
       */
      const joinQuery = (model: string, join: JoinConfig | undefined): Record<string, string> => {
        if (!join || Object.keys(join).length === 0) return {};
        const joins = Object.fromEntries(
          Object.entries(join).map(([name, config]) => [
            name,
            {
              entity: entityNameOf(modelKeyOf(name)),
              from: backendField(model, config.on.from),
              to: backendField(name, config.on.to),
              relation: config.relation === 'one-to-one' ? 'one-to-one' : 'one-to-many',
              limit: Math.min(config.limit ?? backendPageSize, backendPageSize),
            },
          ]),
        );
        return { join: JSON.stringify(joins) };
      };
      /** A row of the backend with Better Auth's names, its embedded records too. */
      const fromBackendRow = (model: string, row: Record<string, unknown>, join: JoinConfig | undefined) => {
        const own: Record<string, unknown> = { ...row };
        const embedded: Record<string, unknown> = {};
        for (const name of Object.keys(join ?? {})) {
          embedded[name] = own[name];
          delete own[name];
        }
        const record = betterAuthRecord(model, own);
        for (const [name, related] of Object.entries(embedded)) {
          record[name] = Array.isArray(related)
            ? related.map((item: Record<string, unknown>) => betterAuthRecord(name, item))
            : related && typeof related === 'object'
              ? betterAuthRecord(name, related as Record<string, unknown>)
              : null;
        }
        return record;
      };

      async function findMany(model: string, where: CleanedWhere[] | undefined, limit: number, offset = 0, sortBy?: { field: string; direction: 'asc' | 'desc' }, join?: JoinConfig) {
        const rows: Record<string, unknown>[] = [];
        const clauses = withUuidIds(model, where);
        if (clauses === 'nothing' || looksUpStoredHash(modelKeyOf(model), clauses)) return rows;
        // Pages of at most 100, until the limit Better Auth asked for (never the whole table).
        while (rows.length < limit) {
          const pageSize = Math.min(backendPageSize, limit - rows.length);
          const query: Record<string, string> = { ...whereQuery(model, clauses), ...joinQuery(model, join), limit: String(pageSize), offset: String(offset + rows.length) };
          if (sortBy) Object.assign(query, { sort: backendField(model, sortBy.field), order: sortBy.direction });
          const page = await rest.list<Record<string, unknown>>(pathOf(model), query);
          rows.push(...page.rows.map((row) => fromBackendRow(model, row, join)));
          if (page.rows.length < pageSize) break;
        }
        return rows;
      }

      return {
        async create({ model, modelKey, data }) {
          const isUser = (modelKey ?? model) === 'user';
          const query: Record<string, string> = isUser && options.personalOrganization !== false ? { personalOrganization: 'true' } : {};
          // Every id in the backend is a uuid. Some plugins make their own (the organization
          // plugin's invitations); those get a uuid instead, and Better Auth uses the id it gets back.
          const record = typeof data.id === 'string' && !uuidPattern.test(data.id) ? { ...data, id: randomUUID() } : data;
          const created = await rest.create<Record<string, unknown>>(pathOf(model), backendRecord(model, record), query);
          return betterAuthRecord(model, created) as typeof data;
        },

        async findOne({ model, where, join, select }) {
          const [row] = (await findMany(model, where, 1, 0, undefined, join)).map(selected(selectedFields(model, select), join));
          return (row ?? null) as never;
        },

        async findMany({ model, where, limit, offset, sortBy, join, select }) {
          return (await findMany(model, where, limit ?? backendPageSize, offset ?? 0, sortBy, join)).map(selected(selectedFields(model, select), join)) as never[];
        },

        async count({ model, where }) {
          const clauses = withUuidIds(model, where);
          if (clauses === 'nothing' || looksUpStoredHash(modelKeyOf(model), clauses)) return 0;
          return (await rest.list(pathOf(model), { ...whereQuery(model, clauses), limit: '1' })).total;
        },

        async update({ model, where, update }) {
          // By id: one request. Otherwise the first match, then that record.
          const id = idOnly(where) ?? ((await findMany(model, where, 1))[0]?.id as string | undefined);
          if (!id) return null;
          const updated = await rest.update<Record<string, unknown>>(pathOf(model), id, backendRecord(model, update as Record<string, unknown>));
          return (updated ? betterAuthRecord(model, updated) : null) as never;
        },

        async updateMany({ model, where, update }) {
          const clauses = withUuidIds(model, where);
          if (clauses === 'nothing') return 0;
          return rest.updateMany(pathOf(model), writeFilter(model, clauses), backendRecord(model, update));
        },

        async delete({ model, where }) {
          const id = idOnly(where) ?? ((await findMany(model, where, 1))[0]?.id as string | undefined);
          if (id) await rest.remove(pathOf(model), id);
        },

        /**
         * `npx authstrap-better-auth-schema` (or Better Auth's CLI): Better Auth's tables as authstrap entities, in
         * better-auth.schema.json (or the file given), which `authstrap generate` reads beside
         * authstrap.schema.ts. Run it in the backend's folder, or pass --output with that folder.
         */
        async createSchema({ file, tables }) {
          return { path: file ?? 'better-auth.schema.json', code: `${JSON.stringify(betterAuthSchema(tables), null, 2)}\n`, overwrite: true };
        },

        async consumeOne({ model, where }) {
          const clauses = withUuidIds(model, where);
          if (clauses === 'nothing' || looksUpStoredHash(modelKeyOf(model), clauses)) return null;
          const consumed = await rest.consumeOne<Record<string, unknown>>(pathOf(model), writeFilter(model, clauses));
          return (consumed ? betterAuthRecord(model, consumed) : null) as never;
        },

        async incrementOne({ model, where, increment, set }) {
          const clauses = withUuidIds(model, where);
          if (clauses === 'nothing') return null;
          const body = { increment: backendRecord(model, increment) as Record<string, number>, set: backendRecord(model, set ?? {}) };
          const updated = await rest.incrementOne<Record<string, unknown>>(pathOf(model), writeFilter(model, clauses), body);
          return (updated ? betterAuthRecord(model, updated) : null) as never;
        },

        async deleteMany({ model, where }) {
          const clauses = withUuidIds(model, where);
          if (clauses === 'nothing') return 0;
          return rest.removeMany(pathOf(model), writeFilter(model, clauses));
        },
      } satisfies CustomAdapter;
    };
  }
}
