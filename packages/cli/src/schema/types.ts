/**
 * The shape of `authstrap.schema.ts`, as people write it (`SchemaFile`) and as the rest of the
 * CLI sees it after loading and validation (`Schema`, every default filled in).
 */

export const fieldTypes = [
  'string',
  'text',
  'integer',
  'number',
  'boolean',
  'datetime',
  'uuid',
  'enum',
  'json',
] as const;
export type FieldType = (typeof fieldTypes)[number];

export const onDeleteActions = ['cascade', 'restrict', 'set null'] as const;
export type OnDeleteAction = (typeof onDeleteActions)[number];

export const idTypes = ['uuid', 'integer'] as const;
export type IdType = (typeof idTypes)[number];

export type LiteralValue = string | number | boolean | null;

/** One field as written in the schema file. */
export interface FieldDefinition {
  type: FieldType;
  nullable?: boolean;
  unique?: boolean;
  /** A literal default; `'now'` on a datetime means the time of insert. */
  default?: LiteralValue;
  minLength?: number;
  maxLength?: number;
  min?: number;
  max?: number;
  format?: 'email';
  /** Stored lowercased (e-mail addresses). */
  lowercase?: boolean;
  /** The allowed values of an enum field. */
  values?: string[];
  /** Matched by the list query's `search` parameter. */
  searchable?: boolean;
  /** Name of the entity this field points at; the field has the type of that entity's id. */
  references?: string;
  onDelete?: OnDeleteAction;
  /** Accepted on input, never returned (password hashes, session tokens). */
  secret?: boolean;
  /** The column's name in an existing table, when it differs from the field name. */
  column?: string;
  /**
   * The column's old name: `authstrap generate` renames that column (keeping its data) instead of
   * dropping it and adding a new one. Ignored once the old column is gone, so it may stay.
   */
  renamedFrom?: string;
  description?: string;
}

/** The roles of a member of an organization. */
export const roles = ['owner', 'admin', 'member'] as const;
export type Role = (typeof roles)[number];

/** What a rule may name: a role, or a condition on the row and the caller (`{ authorId: 'caller' }`). */
export type RuleEntry = Role | Record<string, 'caller'>;

export const ruleOperations = ['list', 'read', 'create', 'update', 'delete'] as const;
export type RuleOperation = (typeof ruleOperations)[number];

/**
 * Who may do what with an entity's records, as written in the schema file. Each operation lists
 * who may: a role (`'admin'`), or a condition on the row (`{ assigneeId: 'caller' }`: the row's
 * assigneeId is the caller), any one of which is enough. An operation left out is open to every
 * member; `list` left out follows `read`. `fields` limits who may read or write single fields.
 */
export type RulesDefinition = Partial<Record<RuleOperation, RuleEntry[]>> & {
  fields?: Record<string, { read?: Role[]; write?: Role[] }>;
};

/** One entity as written in the schema file. */
export interface EntityDefinition {
  /** Rows belong to one organization (default true for your own entities). */
  tenantScoped?: boolean;
  /**
   * Only the trusted server (the service key) reads and writes it, with the service API (where,
   * join, writes by filter, secrets); users get 403. For the tables of a Better Auth plugin.
   * Never tenant-scoped.
   */
  serviceOnly?: boolean;
  /** A uuid field referencing the parent: routes are also nested as /<parents>/:parentId/<children>. */
  parent?: string;
  /** The existing table this entity maps to (default: the entity name). */
  table?: string;
  /** Plural form used in the REST path (default: English rules). */
  plural?: string;
  /**
   * The type of the `id` primary key: a uuid (default), or an integer for an existing table
   * keyed by serial/identity numbers. Callers may choose uuid ids, never integer ones.
   */
  idType?: IdType;
  /** The column holding the creation time (default `createdAt`), or false for a table without one. */
  createdAt?: string | false;
  /** The column set to now() on every update (default `updatedAt`), or false for a table without one. */
  updatedAt?: string | false;
  description?: string;
  fields: Record<string, FieldDefinition>;
  /** Field lists that must be unique together, e.g. `[['providerId', 'accountId']]`. */
  uniqueTogether?: string[][];
  /** Extra indexes, each a list of fields. */
  indexes?: string[][];
  /** The table's old name: renamed (rows kept) instead of dropped and created. Ignored once done. */
  renamedFrom?: string;
  /** Who may list, read, create, update and delete the records (tenant-scoped entities of your own). */
  rules?: RulesDefinition;
  /**
   * Whether each row created, updated or deleted records an event (docs/events.md): true by
   * default for a tenant-scoped entity of your own. `false` for a table whose writes are too many
   * to pay for an event each (one more row in every write's transaction): no trigger, no
   * `<entity>.*` event types, and no audit trail of its rows.
   */
  events?: boolean;
}

export interface SchemaFile {
  /** Include the auth entities (User, account, session, verification) and Organization/member. */
  auth?: boolean;
  entities: Record<string, EntityDefinition>;
}

/** A field after loading: defaults filled in, system fields included. */
export interface Field {
  name: string;
  column: string;
  type: FieldType;
  nullable: boolean;
  unique: boolean;
  default?: LiteralValue;
  minLength?: number;
  maxLength?: number;
  min?: number;
  max?: number;
  format?: 'email';
  lowercase: boolean;
  values?: string[];
  searchable: boolean;
  references?: { entity: string; onDelete: OnDeleteAction };
  secret: boolean;
  /** id, organizationId, createdAt, updatedAt: managed by the backend, not by callers. The
   * timestamps are absent on an entity whose table has no such column. */
  system: boolean;
  description?: string;
  /** The column's old name (see FieldDefinition.renamedFrom). */
  renamedFrom?: string;
}

export interface Entity {
  name: string;
  table: string;
  plural: string;
  /** REST path of the collection, e.g. `/Users`, `/user-settings`. */
  path: string;
  tenantScoped: boolean;
  /** Served to the service key only (see EntityDefinition.serviceOnly). */
  serviceOnly: boolean;
  idType: IdType;
  /** One of the entities authstrap brings (User, account, ..., Organization, member). */
  builtin: boolean;
  parent?: { field: string; entity: string };
  description?: string;
  fields: Field[];
  uniqueTogether: string[][];
  indexes: string[][];
  /** The table's old name (see EntityDefinition.renamedFrom). */
  renamedFrom?: string;
  /**
   * Mapped to a table named in the schema (`table:`), such as one add-auth found: its columns may
   * have other types than the ones authstrap gives a table it creates.
   */
  existingTable?: true;
  /** Who may do what (tenant-scoped entities of the schema's own); absent: every member may do everything. */
  rules?: Rules;
  /** Its rows' changes record no events (EntityDefinition.events: false); absent: they do, when it has events at all (event-sql.ts: hasEvents). */
  events?: false;
}

/**
 * Who may do one operation: a caller whose role is one of `roles`, or, whatever their role, whose
 * user id is in every field of one of `callerFields` (`[['assigneeId']]`: the row's assignee).
 */
export interface OperationRule {
  roles: Role[];
  callerFields: string[][];
}

/** Rules after loading: every operation filled in (all roles when the schema says nothing). */
export interface Rules {
  operations: Record<RuleOperation, OperationRule>;
  /** Fields some roles may not read or write, with the roles that may. */
  fields: { field: string; read: Role[]; write: Role[] }[];
}

export interface Schema {
  auth: boolean;
  entities: Entity[];
}
