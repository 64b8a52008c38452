import { eventTypes } from '../generated/events.js';

/**
 * An event of the audit log in a sentence a person reads: "Olivia Oakes changed Ivy Invitee's
 * role from member to admin", "Support (operator) revoked 3 sessions of jane@acme.com", "The Okta
 * directory deactivated jane@acme.com". Pure: the event and the names it needs come from the
 * caller (src/events/summaries.ts reads them for a page of events in one statement).
 *
 * Rules the sentences keep:
 * - People are named by their name (their address when they have none); in the events about an
 *   account (operator.*, directory.user_*, sign-ins) by their address, which is what support and
 *   an identity provider know them by. A user who no longer exists is "a deleted user".
 * - Nothing secret is said: only names, addresses, roles, field names and values the event's own
 *   data shows (which never holds a secret); a webhook endpoint's URL only up to its host, since
 *   its path may carry a token (Slack's do). A typed sign-in address that is not an address (a
 *   password typed into the wrong field) is not repeated.
 * - Every string from outside (names, record values) is plain text: control and bidirectional
 *   characters taken out, and cut at 80 characters. The sentence is text, never HTML: the console
 *   renders it as text.
 * - A type it does not know (your own `report.exported`) reads as the catalogue describes it, or
 *   as "<actor> recorded report.exported".
 */

/** A user as the sentence names them. */
export interface Person {
  name: string | null;
  email: string;
}

/** What a sentence needs beyond the event: the names of the ids it holds, looked up by the caller. */
export interface SentenceNames {
  /** The acting user (actorType 'user'); null when no user has that id any more. */
  actor?: Person | null;
  /** The user the event is about (subjectUserId); null when no user has that id any more. */
  subject?: Person | null;
  /** The acting machine key's name (actorType 'machine_key'), or the name of the key the event is about; null for a key deleted since. */
  keyName?: string | null;
  /** The acting SCIM directory's name (actorType 'directory'), or the directory the event is about; null for one removed since. */
  directoryName?: string | null;
  /** Whether the acting user acted as an operator of the platform (the operator.* events). */
  actorIsOperator?: boolean;
}

/** The fields of an event a sentence reads (the audit log's, the platform log's and a webhook's). */
export interface SentenceEvent {
  type: string;
  actorType: string;
  actorId: string | null;
  userId: string | null;
  entity: string | null;
  entityId: string | null;
  data: Record<string, unknown>;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A string that is a uuid, or undefined: ids from an event's data are checked before a statement casts them. */
const uuidOr = (value: unknown): string | undefined => (typeof value === 'string' && uuidPattern.test(value) ? value : undefined);

/** The user an event is about: its userId, the user of a User event, the member of a member event. */
export function subjectUserId(event: SentenceEvent): string | undefined {
  if (event.userId) return uuidOr(event.userId);
  if (event.entity === 'User') return uuidOr(event.entityId);
  if (event.type.startsWith('member.')) return uuidOr(recordOf(event).userId);
  return undefined;
}

/** The machine key an event names: its acting key, or the key it is about (key.created, key.revoked). */
export function keyIdOf(event: SentenceEvent): string | undefined {
  if (event.actorType === 'machine_key') return uuidOr(event.actorId);
  if (event.entity === 'apikey') return uuidOr(event.entityId);
  return undefined;
}

/** The SCIM directory an event names: its acting directory, or the directory it is about (directory.created, ...). */
export function directoryIdOf(event: SentenceEvent): string | undefined {
  if (event.actorType === 'directory') return uuidOr(event.actorId);
  if (event.entity === 'scim_directory') return uuidOr(event.entityId);
  return undefined;
}

/** Whether an event's acting user acted as an operator of the platform. */
export const actedAsOperator = (event: SentenceEvent): boolean => event.actorType === 'user' && event.type.startsWith('operator.');

/** The ids a page of events names, each once: what one statement looks up (summaries.ts). */
export function idsNamed(events: readonly SentenceEvent[]): { userIds: string[]; keyIds: string[]; directoryIds: string[] } {
  const userIds = new Set<string>();
  const keyIds = new Set<string>();
  const directoryIds = new Set<string>();
  for (const event of events) {
    const actor = event.actorType === 'user' ? uuidOr(event.actorId) : undefined;
    const subject = subjectUserId(event);
    const key = keyIdOf(event);
    const directory = directoryIdOf(event);
    if (actor) userIds.add(actor);
    if (subject) userIds.add(subject);
    if (key) keyIds.add(key);
    if (directory) directoryIds.add(directory);
  }
  return { userIds: [...userIds], keyIds: [...keyIds], directoryIds: [...directoryIds] };
}

/** What one statement found for those ids: an id missing from a map is a user, key or directory deleted since. */
export interface NameBook {
  users: ReadonlyMap<string, Person>;
  keys: ReadonlyMap<string, string | null>;
  directories: ReadonlyMap<string, string>;
}

/** The names one event needs, from what the statement found. */
export function namesFor(event: SentenceEvent, book: NameBook): SentenceNames {
  const names: SentenceNames = { actorIsOperator: actedAsOperator(event) };
  const actorId = event.actorType === 'user' ? uuidOr(event.actorId) : undefined;
  if (actorId) names.actor = book.users.get(actorId) ?? null;
  const subject = subjectUserId(event);
  if (subject) names.subject = book.users.get(subject) ?? null;
  const key = keyIdOf(event);
  // A key still there but without a name says "a machine key"; one gone says "a revoked machine key".
  if (key) {
    const name = book.keys.get(key);
    if (name) names.keyName = name;
    else if (!book.keys.has(key)) names.keyName = null;
  }
  const directory = directoryIdOf(event);
  if (directory) names.directoryName = book.directories.get(directory) ?? null;
  return names;
}

/** Characters that change how text around them is drawn or read: control, bidirectional and zero-width ones. */
const unsafeCharacters = /[\p{Cc}\u200B-\u200F\u202A-\u202E\u2060-\u2069\u061C\uFEFF]/gu;
const longest = 80;

/** A string from outside as plain text in a sentence: no control or bidirectional characters, one line, at most 80 characters. */
export function plain(value: unknown, max = longest): string {
  const text = String(value).replace(unsafeCharacters, ' ').replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, max - 1).trimEnd()}…` : text;
}

/** A non-empty string of the event's data, as plain text; undefined otherwise. */
const textOf = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? plain(value) : undefined);

/**
 * A sign-in method as words: `password`, `sso`, and Better Auth's (`better-auth:magic-link` ->
 * "magic link (Better Auth)"); an owner's password while SSO is required says break-glass.
 */
function signInMethodWords(method: string | undefined): string | undefined {
  if (!method) return undefined;
  const breakGlass = method.endsWith(':break-glass');
  const bare = breakGlass ? method.slice(0, -':break-glass'.length) : method;
  const betterAuth = bare.startsWith('better-auth:');
  const words = (betterAuth ? bare.slice('better-auth:'.length) : bare).replace(/[-_]/g, ' ').replace(/^sso$/, 'single sign-on');
  return `${words}${betterAuth ? ' (Better Auth)' : ''}${breakGlass ? ', break-glass' : ''}`;
}

const recordOf = (event: SentenceEvent): Record<string, unknown> => {
  const record = event.data.record;
  return record !== null && typeof record === 'object' && !Array.isArray(record) ? (record as Record<string, unknown>) : {};
};

/** `previous`, the values of the changed fields before (the data events' previous_attributes). */
const previousOf = (event: SentenceEvent): Record<string, unknown> => {
  const previous = event.data.previous;
  return previous !== null && typeof previous === 'object' && !Array.isArray(previous) ? (previous as Record<string, unknown>) : {};
};

const changedFieldsOf = (event: SentenceEvent): string[] => (Array.isArray(event.data.changedFields) ? event.data.changedFields.filter((field): field is string => typeof field === 'string').map((field) => plain(field, 40)) : []);

/** "a, b and c". */
function list(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** "1 session", "3 sessions". */
const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The first letter capitalized, for a sentence that begins with a word of its own ("project", "a task"). */
const capitalized = (text: string) => (text ? text[0]!.toUpperCase() + text.slice(1) : text);

/** The sentence's own first word capitalized ("the key ci-deploy ..." -> "The key ..."); a name or an address is left as it is written. */
const upperFirst = (text: string) => (/^(the|a|an) /.test(text) ? text[0]!.toUpperCase() + text.slice(1) : text);

/** A person by name, or their address when they have no name. */
const byName = (person: Person) => textOf(person.name) ?? plain(person.email);

/** ` (reason: ...)`: why an operator acted, when they said (the platform's copy and the user's own events hold it; an organization's copy does not). */
const because = (data: Record<string, unknown>) => (textOf(data.reason) ? ` (reason: ${textOf(data.reason)})` : '');

/** ` in "Acme"`: the organization an operator acted in, named in the platform's copy of the event (its own copy needs no name). */
function inOrganization(data: Record<string, unknown>): string {
  const organization = data.organization;
  const name = organization !== null && typeof organization === 'object' ? textOf((organization as { name?: unknown }).name) : undefined;
  return name ? ` in "${name}"` : '';
}

/** A webhook endpoint's URL up to its host ("https://hooks.example.com/…"): its path and query may hold a token. */
export function urlShown(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const url = new URL(value);
    const rest = url.pathname !== '/' || url.search !== '' ? '/…' : '';
    return plain(`${url.protocol}//${url.host}${rest}`);
  } catch {
    return undefined;
  }
}

/** A typed address as the sentence may repeat it: one that looks like an address, never anything else typed there. */
const addressShown = (value: unknown): string | undefined => (typeof value === 'string' && /^[^\s@]+@[^\s@]+$/.test(value.trim()) ? plain(value.trim()) : undefined);

/**
 * Who acted, as the subject of a sentence ("Olivia Oakes", "Support (operator)", "The key
 * ci-deploy", "The Okta directory"), lower-case where it is not a name ("the key ci-deploy") so
 * that it reads after "by" too; undefined for the system (the backend on its own: a worker, a rule),
 * whose sentences are said without an actor.
 */
function actorOf(event: SentenceEvent, names: SentenceNames): string | undefined {
  switch (event.actorType) {
    case 'user': {
      if (!names.actor) return 'a deleted user';
      const name = byName(names.actor);
      return names.actorIsOperator ? `${name} (operator)` : name;
    }
    case 'machine_key':
      return names.keyName ? `the key ${plain(names.keyName)}` : names.keyName === null && event.actorId ? 'a revoked machine key' : 'a machine key';
    case 'directory':
      return directoryPhrase(names.directoryName);
    case 'service':
      return 'the service key';
    case 'system':
      return undefined;
    default:
      return plain(event.actorType);
  }
}

/** "the Okta directory"; "a removed directory" when it is gone. */
function directoryPhrase(name: string | null | undefined): string {
  if (!name) return 'a removed directory';
  const shown = plain(name);
  return /directory$/i.test(shown) ? `the ${shown}` : `the ${shown} directory`;
}

/** The user the event is about, by name ("Ivy Invitee") or by address (`byAddress`: "jane@acme.com"). */
function subjectOf(names: SentenceNames, { byAddress = false } = {}): string {
  if (!names.subject) return 'a deleted user';
  return byAddress ? plain(names.subject.email) : byName(names.subject);
}

/** `<actor> <what>`, or `<without actor>` when the system acted. */
const said = (actor: string | undefined, what: string, withoutActor: string) => upperFirst(actor ? `${actor} ${what}` : withoutActor);

/** A value of a record as a sentence shows it: short scalars only. */
function valueShown(value: unknown): string | undefined {
  if (value === null) return 'nothing';
  if (typeof value === 'boolean' || typeof value === 'number') return String(value);
  if (typeof value === 'string') return value.length <= 60 ? `"${plain(value, 60)}"` : undefined;
  return undefined;
}

/** `task_item` -> "task item". */
const entityWords = (prefix: string) => plain(prefix.replace(/_/g, ' '), 40);

/** The sentence of an entity's data event (`project.created`, `task_item.updated`, ...): "Project "Apollo" was created by the key ci-deploy". */
function dataEventSentence(event: SentenceEvent, what: 'created' | 'updated' | 'deleted', actor: string | undefined): string {
  const prefix = event.type.slice(0, -what.length - 1);
  const record = recordOf(event);
  const label = textOf(record.name) ?? textOf(record.title);
  const thing = label ? `${entityWords(prefix)} "${label}"` : `a ${entityWords(prefix)}`;
  const by = actor ? ` by ${actor}` : '';
  if (what !== 'updated') return capitalized(`${thing} was ${what}${by}`);
  const changed = changedFieldsOf(event);
  if (changed.length === 1) {
    const field = changed[0]!;
    const before = valueShown(previousOf(event)[field]);
    const after = valueShown(record[field]);
    if (field in previousOf(event) && field in record && before !== undefined && after !== undefined) {
      // A renamed record is named by its old name: "Project "Athena" was renamed to "Apollo"".
      if ((field === 'name' || field === 'title') && before !== 'nothing') return capitalized(`${entityWords(prefix)} ${before} was renamed to ${after}${by}`);
      return capitalized(`${thing}'s ${field} was changed from ${before} to ${after}${by}`);
    }
  }
  return capitalized(`${thing} was changed${changed.length ? ` (${list(changed)})` : ''}${by}`);
}

/** The sentences of the organizations' and members' events, which say more than an entity's. */
function organizationOrMemberSentence(event: SentenceEvent, names: SentenceNames, actor: string | undefined): string | undefined {
  const record = recordOf(event);
  const name = textOf(record.name);
  // Quoted, as a record's values are: any member writes them.
  const organization = name && `"${name}"`;
  const role = textOf(record.role);
  switch (event.type) {
    case 'organization.created':
      return said(actor, `created the organization${organization ? ` ${organization}` : ''}`, `The organization${organization ? ` ${organization}` : ''} was created`);
    case 'organization.deleted':
      return said(actor, `deleted the organization${organization ? ` ${organization}` : ''}`, `The organization${organization ? ` ${organization}` : ''} was deleted`);
    case 'organization.updated': {
      const before = textOf(previousOf(event).name) && `"${textOf(previousOf(event).name)}"`;
      if (changedFieldsOf(event).includes('name') && before && organization) return said(actor, `renamed the organization from ${before} to ${organization}`, `The organization was renamed from ${before} to ${organization}`);
      const fields = changedFieldsOf(event);
      return said(actor, `changed the organization's ${fields.length ? list(fields) : 'settings'}`, `The organization's ${fields.length ? list(fields) : 'settings'} changed`);
    }
    case 'member.created': {
      const as = role ? ` as ${role}` : '';
      if (actor && names.actor && names.subject && event.actorId === subjectUserId(event)) return upperFirst(`${actor} joined the organization${as}`);
      return said(actor, `added ${subjectOf(names)} to the organization${as}`, `${upperFirst(subjectOf(names))} joined the organization${as}`);
    }
    case 'member.deleted': {
      if (actor && names.subject && event.actorId === subjectUserId(event)) return upperFirst(`${actor} left the organization`);
      return said(actor, `removed ${subjectOf(names)}${role ? ` (${role})` : ''} from the organization`, `${upperFirst(subjectOf(names))} is no longer a member`);
    }
    case 'member.updated': {
      const before = textOf(previousOf(event).role);
      const self = Boolean(actor && names.subject && event.actorId === subjectUserId(event));
      const whose = self ? 'their own' : `${subjectOf(names)}'s`;
      if (changedFieldsOf(event).includes('role') && before && role) return said(actor, `changed ${whose} role from ${before} to ${role}`, `${upperFirst(subjectOf(names))}'s role changed from ${before} to ${role}`);
      const fields = changedFieldsOf(event);
      return said(actor, `changed ${whose} membership${fields.length ? ` (${list(fields)})` : ''}`, `${upperFirst(subjectOf(names))}'s membership changed${fields.length ? ` (${list(fields)})` : ''}`);
    }
    default:
      return undefined;
  }
}

/** The sentences of the events the backend's own code records (packages/cli's event-sql.ts, authEventTypes). */
function authEventSentence(event: SentenceEvent, names: SentenceNames, actor: string | undefined): string | undefined {
  const data = event.data;
  const subject = subjectOf(names);
  const account = subjectOf(names, { byAddress: true });
  const role = textOf(data.role);
  const email = addressShown(data.email);
  const domain = textOf(data.domain);
  const theDomain = domain ? `the domain ${domain}` : 'a domain';
  const fields = changedFieldsOf(event);
  const number = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
  switch (event.type) {
    case 'user.signed_up':
      return `${upperFirst(subject)} signed up`;
    case 'user.deleted':
      return `${upperFirst(names.subject ? subject : 'A user')} deleted their account`;
    case 'user.email_verified':
      return `${upperFirst(subject)} confirmed their e-mail address`;
    case 'user.email_changed':
      return `${upperFirst(subject)} changed their e-mail address${names.subject ? ` to ${plain(names.subject.email)}` : ''}`;
    case 'user.password_changed':
      return `${upperFirst(subject)} changed their password`;
    case 'user.password_reset':
      return `${upperFirst(subject)} reset their password with a link from the mail`;
    case 'session.signed_in': {
      const method = signInMethodWords(textOf(data.method));
      // A single sign-on names its connection, as the organization calls it, and its protocol.
      const connection = textOf(data.connectionName);
      const protocol = textOf(data.protocol)?.toUpperCase();
      const through = `${connection ? ` through "${connection}"` : ''}${protocol ? ` (${protocol})` : ''}`;
      return `${upperFirst(account)} signed in${method ? ` with ${method}` : ''}${data.method === 'sso' ? through : ''}`;
    }
    case 'session.sign_in_failed':
      if (names.subject) return `A sign-in as ${account} failed`;
      return email ? `A sign-in as ${email} failed (no account has that address)` : 'A sign-in failed (no account has the address typed)';
    case 'session.sign_in_refused': {
      const who = names.subject ? account : (email ?? 'an address');
      const why = { SSO_REQUIRED: 'the organization requires single sign-on', DEPROVISIONED: 'their directory deprovisioned them', BANNED: 'the account is banned' }[String(data.code)] ?? textOf(data.code);
      return `A sign-in as ${who} was refused${why ? `: ${why}` : ''}`;
    }
    case 'sso.break_glass_used':
      return `${upperFirst(account)} signed in with a password while the organization requires single sign-on (break-glass)`;
    case 'session.signed_out':
      return `${upperFirst(subject)} signed out`;
    case 'session.revoked': {
      const revoked = number(data.revoked);
      return `${upperFirst(subject)} signed out ${revoked === undefined ? 'sessions' : count(revoked, 'session')} of theirs`;
    }
    case 'invitation.sent':
      return said(actor, `invited ${email ?? 'an address'}${role ? ` as ${role}` : ''}`, `${email ?? 'An address'} was invited${role ? ` as ${role}` : ''}`);
    case 'invitation.revoked':
      return said(actor, `withdrew the invitation of ${email ?? 'an address'}${role ? ` (${role})` : ''}`, `The invitation of ${email ?? 'an address'} was withdrawn`);
    case 'invitation.accepted':
      return `${upperFirst(subject)} accepted an invitation${role ? ` as ${role}` : ''}`;
    case 'invitation.declined':
      return `${upperFirst(subject)} declined an invitation`;
    case 'domain.claimed':
      return said(actor, `claimed ${theDomain}`, `${capitalized(theDomain)} was claimed`);
    case 'domain.verified': {
      const ended = number(data.sessionsEnded);
      return `${capitalized(theDomain)} was verified: its DNS TXT record was found${ended ? ` (${count(ended, 'session')} refused by single sign-on ended)` : ''}`;
    }
    case 'domain.failing':
      return `${capitalized(theDomain)} is failing: its DNS TXT record is gone${typeof data.lapsesAt === 'string' ? ` (it lapses at ${plain(data.lapsesAt)})` : ''}`;
    case 'domain.lapsed':
      return `${capitalized(theDomain)} lapsed: its DNS TXT record did not come back`;
    case 'domain.removed':
      return said(actor, `removed ${theDomain}`, `${capitalized(theDomain)} was removed`);
    case 'webhook_endpoint.created': {
      const url = urlShown(data.url);
      return said(actor, `added a webhook endpoint${url ? ` ${url}` : ''}`, `A webhook endpoint${url ? ` ${url}` : ''} was added`);
    }
    case 'webhook_endpoint.updated':
      if (actor === undefined && data.enabled === false) return 'The backend disabled a webhook endpoint after repeated failed deliveries';
      if (fields.length === 1 && fields[0] === 'secret') return said(actor, "rotated a webhook endpoint's signing secret", "A webhook endpoint's signing secret was rotated");
      return said(actor, `changed a webhook endpoint${fields.length ? ` (${list(fields)})` : ''}`, `A webhook endpoint was changed${fields.length ? ` (${list(fields)})` : ''}`);
    case 'webhook_endpoint.deleted':
      return said(actor, 'removed a webhook endpoint', 'A webhook endpoint was removed');
    case 'key.created': {
      const name = textOf(data.name) ?? (names.keyName ? plain(names.keyName) : undefined);
      return said(actor, `made the machine key ${name ?? '(unnamed)'}${role ? ` with the ${role} role` : ''}`, `The machine key ${name ?? '(unnamed)'} was made`);
    }
    case 'key.revoked': {
      const name = names.keyName ? plain(names.keyName) : undefined;
      return said(actor, `revoked ${name ? `the machine key ${name}` : 'a machine key'}${role ? ` (${role})` : ''}`, `A machine key was revoked`);
    }
    case 'directory.created': {
      const name = textOf(data.name) ?? names.directoryName;
      const defaultRole = textOf(data.defaultRole);
      return said(actor, `connected ${directoryPhrase(name)}${defaultRole ? `, which adds people with the ${defaultRole} role` : ''}`, `${upperFirst(directoryPhrase(name))} was connected`);
    }
    case 'directory.updated':
      return said(actor, `changed ${directoryPhrase(names.directoryName ?? textOf(data.name))}${fields.length ? ` (${list(fields)})` : ''}`, `${upperFirst(directoryPhrase(names.directoryName))} was changed`);
    case 'directory.deleted':
      return said(actor, `removed ${directoryPhrase(textOf(data.name) ?? names.directoryName)}`, `${upperFirst(directoryPhrase(textOf(data.name) ?? names.directoryName))} was removed`);
    case 'directory.token_rotated':
      return said(actor, `gave ${directoryPhrase(names.directoryName)} a new token`, `${upperFirst(directoryPhrase(names.directoryName))} got a new token`);
    case 'directory.token_revoked':
      return said(actor, `revoked a token of ${directoryPhrase(names.directoryName)}`, `A token of ${directoryPhrase(names.directoryName)} was revoked`);
    case 'directory.user_provisioned': {
      const who = names.subject ? account : (addressShown(data.email) ?? textOf(data.userName) ?? 'a user');
      const how = data.membership === 'invited' ? ' (invited: the account is outside the verified domains)' : '';
      return said(actor, `provisioned ${who}${how}`, `${upperFirst(who)} was provisioned${how}`);
    }
    case 'directory.user_updated':
      return said(actor, `changed ${account}${fields.length ? ` (${list(fields)})` : ''}`, `${upperFirst(account)} was changed by a directory`);
    case 'directory.user_deprovisioned': {
      const ended = number(data.sessionsEnded);
      const verb = data.reason === 'directory-deleted' ? 'deleted' : 'deactivated';
      const tail = ended ? ` (${count(ended, 'session')} ended)` : '';
      return said(actor, `${verb} ${account}${tail}`, `${upperFirst(account)} was deprovisioned${tail}`);
    }
    case 'directory.user_reactivated':
      return said(actor, `reactivated ${account}`, `${upperFirst(account)} was reactivated`);
    case 'directory.group_created': {
      const group = textOf(data.displayName);
      const members = number(data.members);
      const what = `${group ? `the group "${group}"` : 'a group'}${members ? ` with ${count(members, 'member')}` : ''}`;
      return said(actor, `pushed ${what}`, `${upperFirst(what)} was pushed by a directory`);
    }
    case 'directory.group_updated': {
      const group = textOf(data.displayName);
      const changes = [data.renamed === true ? 'its name' : undefined, data.membersChanged === true ? 'its members' : undefined].filter((part): part is string => part !== undefined);
      const what = `${group ? `the group "${group}"` : 'a group'}${changes.length ? ` (${list(changes)})` : ''}`;
      return said(actor, `changed ${what}`, `${upperFirst(what)} was changed by a directory`);
    }
    case 'directory.group_deleted': {
      const group = textOf(data.displayName);
      return said(actor, `removed ${group ? `the group "${group}"` : 'a group'}`, `${group ? `The group "${group}"` : 'A group'} was removed by a directory`);
    }
    case 'directory.role_changed': {
      const from = textOf(data.from);
      const to = textOf(data.to);
      const change = from && to ? ` from ${from} to ${to}` : '';
      return said(actor, `changed ${account}'s role${change} (their groups)`, `${upperFirst(account)}'s role was changed${change} by their directory groups`);
    }
    case 'directory.role_mappings_changed': {
      const mappings = number(data.mappings);
      const changed = number(data.rolesChanged);
      const what = `${mappings === undefined ? 'which groups give which roles' : `the roles of ${count(mappings, 'group')}`} in ${directoryPhrase(names.directoryName)}${changed ? ` (${count(changed, 'role')} changed)` : ''}`;
      return said(actor, `mapped ${what}`, `${upperFirst(what)} were mapped`);
    }
    case 'operator.banned_user': {
      const reason = textOf(data.reason);
      const until = textOf(data.expiresAt);
      const what = `${account}${until ? ` until ${until}` : ''}${reason ? ` (reason: ${reason})` : ''}`;
      return said(actor, `banned ${what}`, `${upperFirst(what)} was banned`);
    }
    case 'operator.unbanned_user': {
      const reason = textOf(data.reason);
      return said(actor, `lifted the ban on ${account}${reason ? ` (reason: ${reason})` : ''}`, `The ban on ${account} was lifted`);
    }
    case 'operator.impersonation_started': {
      const reason = textOf(data.reason);
      const until = textOf(data.expiresAt);
      const what = `${account}${until ? ` until ${until}` : ''}${reason ? ` (reason: ${reason})` : ''}`;
      return said(actor, `signed in as ${what}`, `An operator signed in as ${what}`);
    }
    case 'operator.impersonation_ended':
      return said(actor, `ended their session as ${account}`, `A session of an operator as ${account} ended${data.endedBy === 'sign-out' ? ' (signed out)' : ''}`);
    case 'sso_connection.created':
    case 'sso_connection.updated':
    case 'sso_connection.deleted':
    case 'sso_connection.enabled':
    case 'sso_connection.disabled':
    case 'sso_connection.tested': {
      const name = textOf(data.name);
      const connection = name ? `the single sign-on connection "${name}"` : 'a single sign-on connection';
      const ended = number(data.sessionsEnded);
      const tail = ended ? ` (${count(ended, 'session')} ended)` : '';
      const done: Record<string, string> = {
        'sso_connection.created': `added ${connection}`,
        'sso_connection.updated': `changed ${connection}${fields.length ? ` (${list(fields)})` : ''}`,
        'sso_connection.deleted': `removed ${connection}${tail}`,
        'sso_connection.enabled': `turned on ${connection}`,
        'sso_connection.disabled': `turned off ${connection}${tail}`,
        'sso_connection.tested': `tested ${connection}: ${data.ok === true ? 'it signed in' : `it failed${textOf(data.error) ? ` (${textOf(data.error)})` : ''}`}`,
      };
      const passive: Record<string, string> = {
        'sso_connection.created': 'was added',
        'sso_connection.updated': 'was changed',
        'sso_connection.deleted': `was removed${tail}`,
        'sso_connection.enabled': 'was turned on',
        'sso_connection.disabled': `was turned off${tail}`,
        'sso_connection.tested': data.ok === true ? 'passed its test' : 'failed its test',
      };
      return said(actor, done[event.type]!, upperFirst(`${connection} ${passive[event.type]}`));
    }
    case 'sso_connection.certificate_expiring': {
      const name = textOf(data.name);
      const connection = name ? `the single sign-on connection "${name}"` : 'a single sign-on connection';
      const certificates = Array.isArray(data.certificates) ? (data.certificates as { notAfter?: unknown; expired?: unknown }[]) : [];
      const first = certificates.map((certificate) => textOf(certificate.notAfter)).filter(Boolean).sort()[0];
      const expired = certificates.some((certificate) => certificate.expired === true);
      const when = first ? ` on ${plain(first)}` : '';
      return upperFirst(`the identity provider's signing certificate of ${connection} ${expired ? `expired${when}` : `expires${when}`}: ask the identity provider for the next one and refresh or update the connection`);
    }
    case 'sso_connection.refresh_failed': {
      const name = textOf(data.name);
      const connection = name ? `the single sign-on connection "${name}"` : 'a single sign-on connection';
      const error = textOf(data.error);
      return upperFirst(`the identity provider of ${connection} could not be read${error ? ` (${error})` : ''}; sign-in goes on with what was read before`);
    }
    case 'sso_policy.updated': {
      const required = data.ssoRequired === true;
      const ended = number(data.sessionsEnded);
      const what = `${required ? 'required single sign-on for the verified domains' : 'stopped requiring single sign-on'}${required && data.breakGlass === 'owners' ? ' (owners keep a password)' : ''}${ended ? `, which ended ${count(ended, 'session')}` : ''}`;
      return said(actor, what, upperFirst(`the organization ${what}`));
    }
    case 'directory.request_refused':
      return said(actor, 'was refused a change that would leave the organization without an owner', 'A directory was refused a change that would leave the organization without an owner');
    case 'operator.granted':
      return said(actor, `made ${account} an operator of the platform`, `${upperFirst(account)} was made an operator of the platform${data.by === 'command line' ? ' from the command line' : ''}`);
    case 'operator.revoked':
      return said(actor, `took the operator role from ${account}`, `${upperFirst(account)} is no longer an operator of the platform${data.by === 'command line' ? ' (from the command line)' : ''}`);
    case 'operator.sent_verification_mail':
      return said(actor, `sent ${account} a new link to verify their address${because(data)}`, `${upperFirst(account)} was sent a new link to verify their address`);
    case 'operator.sent_password_reset':
      return said(actor, `sent ${account} a link to reset their password${because(data)}`, `${upperFirst(account)} was sent a link to reset their password`);
    case 'operator.changed_role': {
      const from = textOf(data.from);
      const to = textOf(data.to);
      const change = from && to ? ` from ${from} to ${to}` : '';
      return said(actor, `changed ${subject}'s role${change}${inOrganization(data)}${because(data)}`, `${upperFirst(subject)}'s role was changed${change}`);
    }
    case 'operator.transferred_ownership': {
      const previous = Array.isArray(data.previousOwners) ? data.previousOwners.map((owner) => addressShown((owner as { email?: unknown } | null)?.email)).filter((shown): shown is string => shown !== undefined) : [];
      const tail = previous.length ? ` (${list(previous)} ${previous.length === 1 ? 'is' : 'are'} now ${previous.length === 1 ? 'an admin' : 'admins'})` : '';
      return said(actor, `made ${subject} the owner of the organization${inOrganization(data)}${tail}${because(data)}`, `${upperFirst(subject)} was made the owner of the organization${tail}`);
    }
    case 'operator.disabled_key':
    case 'operator.enabled_key': {
      const name = names.keyName ? plain(names.keyName) : textOf(data.name);
      const key = name ? `the machine key ${name}` : 'a machine key';
      const verb = event.type === 'operator.disabled_key' ? 'disabled' : 'enabled';
      return said(actor, `${verb} ${key}${inOrganization(data)}${because(data)}`, `${upperFirst(key)} was ${verb}`);
    }
    case 'operator.disabled_webhook_endpoint':
    case 'operator.enabled_webhook_endpoint': {
      const url = urlShown(data.url);
      const endpoint = `the webhook endpoint${url ? ` ${url}` : ''}`;
      const verb = event.type === 'operator.disabled_webhook_endpoint' ? 'disabled' : 'enabled';
      return said(actor, `${verb} ${endpoint}${inOrganization(data)}${because(data)}`, `${upperFirst(endpoint)} was ${verb}`);
    }
    case 'operator.deleted_user': {
      const who = email ?? 'a user';
      return said(actor, `deleted the account of ${who}${because(data)}`, `The account of ${who} was deleted`);
    }
    case 'operator.deleted_organization': {
      const name = textOf(data.name);
      const what = `the organization${name ? ` "${name}"` : ''}`;
      return said(actor, `deleted ${what}${because(data)}`, `${upperFirst(what)} was deleted`);
    }
    case 'operator.revoked_sessions': {
      const sessions = number(data.sessions);
      const reason = textOf(data.reason);
      const what = `${sessions === undefined ? 'the sessions' : count(sessions, 'session')} of ${account}${reason ? ` (reason: ${reason})` : ''}`;
      return said(actor, `revoked ${what}`, `${upperFirst(what)} were revoked`);
    }
    default:
      return undefined;
  }
}

/** The event as a sentence: for every type of the catalogue, the entities' events, and anything else by its description. */
export function eventSentence(event: SentenceEvent, names: SentenceNames = {}): { sentence: string } {
  const actor = actorOf(event, names);
  const dataEvent = /\.(created|updated|deleted)$/.exec(event.type);
  const sentence =
    authEventSentence(event, names, actor) ??
    organizationOrMemberSentence(event, names, actor) ??
    (dataEvent && 'record' in event.data ? dataEventSentence(event, dataEvent[1] as 'created' | 'updated' | 'deleted', actor) : undefined) ??
    fallbackSentence(event, actor);
  return { sentence };
}

/** A type without a sentence of its own: the catalogue's description, with who did it. */
function fallbackSentence(event: SentenceEvent, actor: string | undefined): string {
  const described = (eventTypes as Record<string, string>)[event.type];
  const by = actor ? ` (by ${actor})` : '';
  if (described) return `${described}${by}`;
  return said(actor, `recorded ${plain(event.type, 60)}`, `${plain(event.type, 60)} was recorded`);
}
