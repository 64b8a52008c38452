import type { Role } from '../auth/types.js';
import type { EntityRules } from '../generated/guards/rules.js';
import type { ListSpec } from '../http/list-fields.js';
import type { FieldFilter } from '../http/list-query.js';

/**
 * Who hears of which change: the list route's rules, decided in this process from the event
 * alone. A data event carries its record as the change left it (as it was, for a deletion), so
 * everything the list route's SQL asks of a row (its organization, the role's rules, a row
 * condition such as `{ authorId: 'caller' }`, the subscription's filters) and the field rules
 * can be asked of the event's record here, for every stream, without asking PostgreSQL once per
 * subscriber (bench/README.md, "Live streams").
 *
 * Pure: no database, no clock. The streams (streams.ts) keep the listener's role current.
 */

/** An entity a stream may carry (src/generated/realtime.ts). */
export interface StreamEntity {
  /** Its event types' prefix: `task` of `task.created`. */
  prefix: string;
  /** Its list route's fields (the filters a subscription may name, the record's shape). */
  spec: ListSpec;
  /** Its rules; absent, every member lists every record. */
  rules?: EntityRules;
}

/** Who holds a stream: a member (their user id, their role), or a machine key (its role, no user). */
export interface Listener {
  userId: string | null;
  role: Role;
}

/** What a stream asked for about one entity: every change, the changes of one record, or of the records its filters match. */
export interface Interest {
  entity: string;
  stream: StreamEntity;
  filters: FieldFilter[];
  recordId?: string;
}

/** An event as the stream reads it (authstrap.stream_events): the audit log's event without its request's IP address and user agent. */
export interface StreamedEvent {
  id: string;
  type: string;
  organizationId: string;
  actorType: string;
  actorId: string | null;
  entity: string | null;
  entityId: string | null;
  createdAt: string;
  data: { record?: Record<string, unknown>; changedFields?: string[]; previous?: Record<string, unknown> };
}

/** What a listener receives of an event: its record and changes as they may read them. */
export interface VisibleEvent {
  id: string;
  type: string;
  organizationId: string;
  actorType: string;
  actorId: string | null;
  entity: string;
  entityId: string | null;
  createdAt: string;
  data: { record: Record<string, unknown>; changedFields?: string[]; previous?: Record<string, unknown> };
}

/**
 * The event as `listener` may see it through one of their `interests`, or undefined when the
 * list route would not have shown them its record (for a deletion: the record as it was).
 */
export function visibleEvent(event: StreamedEvent, interests: readonly Interest[], listener: Listener): VisibleEvent | undefined {
  if (event.entity === null || event.data.record === undefined) return undefined;
  for (const interest of interests) {
    if (interest.entity !== event.entity) continue;
    if (interest.recordId !== undefined && interest.recordId !== event.entityId) continue;
    const record = recordOf(event, interest.stream.spec);
    if (!mayList(interest.stream.rules, listener, record)) continue;
    if (!interest.filters.every((filter) => matches(filter, record[filter.field]))) continue;
    return shownTo(event, interest.stream, listener.role, record);
  }
  return undefined;
}

/**
 * One event goes to every stream of its organization: its record is read once, and what each
 * role sees of it made once (the same object for every stream of that role, so that streams.ts
 * writes its JSON once too), however many streams there are.
 */
const records = new WeakMap<StreamedEvent, Record<string, unknown>>();
const views = new WeakMap<StreamedEvent, Map<string, VisibleEvent>>();

function recordOf(event: StreamedEvent, spec: ListSpec): Record<string, unknown> {
  let record = records.get(event);
  if (!record) records.set(event, (record = apiRecord(spec, event.data.record!)));
  return record;
}

function shownTo(event: StreamedEvent, stream: StreamEntity, role: Role, record: Record<string, unknown>): VisibleEvent {
  let byRole = views.get(event);
  if (!byRole) views.set(event, (byRole = new Map()));
  let view = byRole.get(role);
  if (!view) byRole.set(role, (view = shown(event, stream, role, record)));
  return view;
}

/** The list rule: a role it names, or (any role) the listener's user id in every field of one of its row conditions. */
export function mayList(rules: EntityRules | undefined, listener: Listener, record: Record<string, unknown>): boolean {
  if (!rules) return true;
  const { roles, callerFields } = rules.operations.list;
  if (roles.includes(listener.role)) return true;
  return listener.userId !== null && callerFields.some((fields) => fields.every((field) => record[field] === listener.userId));
}

/** The fields `role` may not read (the entity's field rules). */
const hiddenFrom = (rules: EntityRules | undefined, role: Role): Set<string> =>
  new Set(Object.entries(rules?.fields ?? {}).filter(([, rule]) => !rule.read.includes(role)).map(([field]) => field));

function shown(event: StreamedEvent, stream: StreamEntity, role: Role, record: Record<string, unknown>): VisibleEvent {
  const hidden = hiddenFrom(stream.rules, role);
  const columns = columnsToFields(stream.spec);
  const visible = (field: string | undefined): field is string => field !== undefined && !hidden.has(field);
  const data: VisibleEvent['data'] = { record: Object.fromEntries(Object.entries(record).filter(([field]) => !hidden.has(field))) };
  if (event.data.changedFields) data.changedFields = event.data.changedFields.map((column) => columns.get(column)).filter(visible);
  if (event.data.previous) data.previous = apiRecord(stream.spec, event.data.previous, hidden);
  return {
    id: event.id,
    type: event.type,
    organizationId: event.organizationId,
    actorType: event.actorType,
    actorId: event.actorId,
    entity: event.entity!,
    entityId: event.entityId,
    createdAt: isoTimestamp(event.createdAt),
    data,
  };
}

const fieldNames = new WeakMap<ListSpec, Map<string, string>>();

/** Column -> API field, for the fields the list route shows (secret ones are never in an event). */
function columnsToFields(spec: ListSpec): Map<string, string> {
  let map = fieldNames.get(spec);
  if (!map) {
    map = new Map(Object.entries(spec.fields).filter(([, field]) => !field.secret).map(([name, field]) => [field.column, name]));
    fieldNames.set(spec, map);
  }
  return map;
}

/** The event's row (its columns, as PostgreSQL's to_jsonb wrote them) as the list route's record: API field names, ISO 8601 times. */
export function apiRecord(spec: ListSpec, row: Record<string, unknown>, leaveOut: ReadonlySet<string> = new Set()): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const [column, name] of columnsToFields(spec)) {
    if (!(column in row) || leaveOut.has(name)) continue;
    const value = row[column];
    record[name] = spec.fields[name]!.type === 'datetime' && typeof value === 'string' ? isoTimestamp(value) : value;
  }
  return record;
}

/** `2026-11-28 10:00:00.123456+00` or `...T...+00:00` -> `2026-11-28T10:00:00.123Z`, as the routes write times. */
const isoTimestamp = (value: string) => {
  const time = Date.parse(value);
  return Number.isNaN(time) ? value : new Date(time).toISOString();
};

/** One filter of the list query language, asked of a record's value, as the list route's SQL answers it. */
export function matches(filter: FieldFilter, value: unknown): boolean {
  const wanted = filter.value;
  switch (filter.operator) {
    case 'eq':
      return wanted === null ? value === null || value === undefined : value !== null && value !== undefined && same(value, wanted);
    case 'ne':
      // As the SQL filter: a null value is "not equal" to any value.
      return wanted === null ? value !== null && value !== undefined : value === null || value === undefined || !same(value, wanted);
    case 'in':
      return value !== null && value !== undefined && (wanted as unknown[]).some((one) => same(value, one));
    default: {
      if (value === null || value === undefined) return false;
      const [left, right] = [comparable(value), comparable(wanted)];
      if (Number.isNaN(left) || Number.isNaN(right)) return false;
      if (filter.operator === 'gt') return left > right;
      if (filter.operator === 'gte') return left >= right;
      if (filter.operator === 'lt') return left < right;
      return left <= right;
    }
  }
}

const comparable = (value: unknown): number => (value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number(value));

/** Equal as PostgreSQL compares them: times by their instant, the rest exactly (ids are lowercase on both sides). */
function same(value: unknown, wanted: unknown): boolean {
  if (wanted instanceof Date) return typeof value === 'string' && Date.parse(value) === wanted.getTime();
  return value === wanted;
}
