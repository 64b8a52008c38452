import { describe, expect, it } from 'vitest';
import { eventTypes, tableEventTypes } from '../src/generated/events.js';
import { eventSentence, idsNamed, namesFor, plain, urlShown, type NameBook, type SentenceEvent, type SentenceNames } from '../src/events/sentences.js';

/**
 * The audit logs' sentences (src/events/sentences.ts), pure: an event and the names it needs in,
 * a sentence a person reads out. The HTTP side (names read for a page, both logs) is in
 * audit-log.test.ts and operator.test.ts.
 */

const olivia = { id: '00000000-0000-4000-8000-0000000000a1', name: 'Olivia Oakes', email: 'olivia@acme.example' };
const ivy = { id: '00000000-0000-4000-8000-0000000000b2', name: 'Ivy Invitee', email: 'ivy@acme.example' };
const keyId = '00000000-0000-4000-8000-0000000000c3';
const directoryId = '00000000-0000-4000-8000-0000000000d4';

/** An event as the log answers it: by Olivia unless said otherwise. */
const event = (type: string, fields: Partial<SentenceEvent> = {}): SentenceEvent => ({
  type,
  actorType: 'user',
  actorId: olivia.id,
  userId: null,
  entity: null,
  entityId: null,
  data: {},
  ...fields,
});

/** Olivia acting, Ivy the subject, the key ci-deploy and the Okta directory: every name known. */
const everyName: SentenceNames = { actor: olivia, subject: ivy, keyName: 'ci-deploy', directoryName: 'Okta' };

/** Data as each type's code records it (src/auth/, src/scim/, src/domains/, src/events/, operator-sql.ts). */
const dataOf: Record<string, Record<string, unknown>> = {
  'session.signed_in': { method: 'email' },
  'session.sign_in_failed': { email: 'ivy@acme.example' },
  'session.sign_in_refused': { email: 'ivy@acme.example', method: 'email', code: 'SSO_REQUIRED' },
  'session.revoked': { revoked: 2 },
  'invitation.sent': { email: 'new@acme.example', role: 'member' },
  'invitation.revoked': { email: 'new@acme.example', role: 'member' },
  'invitation.accepted': { role: 'member' },
  'invitation.declined': { role: 'member' },
  'domain.claimed': { domain: 'acme.example' },
  'domain.verified': { domain: 'acme.example', previousState: 'pending', sessionsEnded: 2 },
  'domain.failing': { domain: 'acme.example', reason: 'no record', lapsesAt: '2026-12-20T00:00:00.000Z' },
  'domain.lapsed': { domain: 'acme.example', failingSince: '2026-12-01T00:00:00.000Z' },
  'domain.removed': { domain: 'acme.example', state: 'verified' },
  'webhook_endpoint.created': { url: 'https://hooks.example.com/services/T000/B000/XXXXsecret', eventTypes: [] },
  'webhook_endpoint.updated': { changedFields: ['url'] },
  'key.created': { name: 'ci-deploy', role: 'member', permissions: { Project: ['create'] } },
  'key.revoked': { role: 'member' },
  'directory.created': { name: 'Okta', preset: 'okta', defaultRole: 'member' },
  'directory.updated': { changedFields: ['defaultRole'] },
  'directory.deleted': { name: 'Okta' },
  'directory.token_rotated': { tokenId: 'x', start: 'scim_abc', overlapSeconds: 3600 },
  'directory.token_revoked': { tokenId: 'x' },
  'directory.user_provisioned': { userName: 'ivy@acme.example', email: 'ivy@acme.example', membership: 'member', newAccount: true },
  'directory.user_updated': { changedFields: ['displayName'] },
  'directory.user_deprovisioned': { reason: 'directory-inactive', sessionsEnded: 1 },
  'directory.request_refused': { method: 'PATCH', path: '/Users/1', detail: 'last owner' },
  'operator.granted': { by: 'command line' },
  'operator.revoked_sessions': { sessions: 3, reason: 'spam invitations' },
};

/** An event of `type` as its code records it, with the entity and ids it carries. */
function recorded(type: string): SentenceEvent {
  if ((tableEventTypes as readonly string[]).includes(type)) {
    const record = type.startsWith('member.') ? { id: 'm1', userId: ivy.id, role: 'admin' } : { id: 'r1', name: 'Apollo', status: 'active' };
    const updated = type.endsWith('.updated') ? { changedFields: type.startsWith('member.') ? ['role'] : ['status'], previous: type.startsWith('member.') ? { role: 'member' } : { status: 'archived' } } : {};
    return event(type, { entity: type.split('.')[0]!, entityId: 'r1', data: { ...updated, record } });
  }
  const [prefix] = type.split('.');
  const about = prefix === 'user' || prefix === 'session' || prefix === 'operator' || type.startsWith('directory.user_') || type.startsWith('invitation.a') || type.startsWith('invitation.d');
  const entity = prefix === 'key' ? 'apikey' : prefix === 'directory' && !type.startsWith('directory.user_') ? 'scim_directory' : (prefix ?? null);
  const entityId = entity === 'apikey' ? keyId : entity === 'scim_directory' ? directoryId : null;
  const actor = prefix === 'directory' && type.startsWith('directory.user_') ? { actorType: 'directory', actorId: directoryId } : {};
  return event(type, { userId: about ? ivy.id : null, entity, entityId, data: dataOf[type] ?? {}, ...actor });
}

describe('the audit log in sentences', () => {
  it('says every type of the catalogue in a sentence of its own: never the raw type, nor the catalogue\'s text, nor a missing value', () => {
    const types = Object.keys(eventTypes);
    // The new kinds are all there: the catalogue is what the test walks.
    for (const prefix of ['directory.', 'domain.', 'operator.', 'member.', 'project.', 'organization.']) expect(types.some((type) => type.startsWith(prefix)), prefix).toBe(true);
    for (const type of types) {
      const { sentence } = eventSentence(recorded(type), everyName);
      expect(sentence, type).not.toContain(type);
      expect(sentence, type).not.toBe((eventTypes as Record<string, string>)[type]);
      expect(sentence, type).not.toMatch(/undefined|null|\[object|NaN|\(by /);
      // Capitalized, unless it begins with an address (written as it is).
      expect(sentence, type).toMatch(/^([A-Z"]|[a-z.]+@)/);
      expect(sentence.length, type).toBeGreaterThan(10);
      if (process.env.PRINT_SENTENCES) console.log(`${type.padEnd(32)} ${sentence}`);
    }
  });

  it('says a role change from what to what, by whom and whose', () => {
    const changed = event('member.updated', { entity: 'member', entityId: 'm1', data: { changedFields: ['role'], previous: { role: 'member' }, record: { userId: ivy.id, role: 'admin' } } });
    expect(eventSentence(changed, { actor: olivia, subject: ivy }).sentence).toBe("Olivia Oakes changed Ivy Invitee's role from member to admin");
    // Her own, and by a key.
    expect(eventSentence({ ...changed, actorId: ivy.id }, { actor: ivy, subject: ivy }).sentence).toBe('Ivy Invitee changed their own role from member to admin');
    expect(eventSentence({ ...changed, actorType: 'machine_key', actorId: keyId }, { keyName: 'ci-deploy', subject: ivy }).sentence).toBe("The key ci-deploy changed Ivy Invitee's role from member to admin");
    // Joining and leaving.
    const joined = event('member.created', { actorId: ivy.id, data: { record: { userId: ivy.id, role: 'member' } } });
    expect(eventSentence(joined, { actor: ivy, subject: ivy }).sentence).toBe('Ivy Invitee joined the organization as member');
    const removed = event('member.deleted', { data: { record: { userId: ivy.id, role: 'admin' } } });
    expect(eventSentence(removed, { actor: olivia, subject: ivy }).sentence).toBe('Olivia Oakes removed Ivy Invitee (admin) from the organization');
  });

  it('says how someone signed in, on either path, in words', () => {
    const signedIn = (method: string) => eventSentence(event('session.signed_in', { actorId: ivy.id, userId: ivy.id, entity: 'session', entityId: 's1', data: { method } }), { actor: ivy, subject: ivy }).sentence;
    expect(signedIn('password')).toBe('ivy@acme.example signed in with password');
    expect(signedIn('sso')).toBe('ivy@acme.example signed in with single sign-on');
    expect(signedIn('password:break-glass')).toBe('ivy@acme.example signed in with password, break-glass');
    expect(signedIn('better-auth:magic-link')).toBe('ivy@acme.example signed in with magic link (Better Auth)');
    expect(signedIn('better-auth:password:break-glass')).toBe('ivy@acme.example signed in with password (Better Auth), break-glass');
    // A single sign-on: through which of the organization's connections, by which protocol.
    const bySso = (data: Record<string, unknown>) => eventSentence(event('session.signed_in', { actorId: ivy.id, userId: ivy.id, entity: 'session', entityId: 's1', data: { method: 'sso', ...data } }), { actor: ivy, subject: ivy }).sentence;
    expect(bySso({ protocol: 'saml', connectionId: 'c1', connectionName: 'Acme Entra ID' })).toBe('ivy@acme.example signed in with single sign-on through "Acme Entra ID" (SAML)');
    expect(bySso({ protocol: 'oidc', connectionId: 'c1' })).toBe('ivy@acme.example signed in with single sign-on (OIDC)');
  });

  it("names a record's events by the record, and who acted after by", () => {
    const created = event('project.created', { actorType: 'machine_key', actorId: keyId, entity: 'Project', data: { record: { name: 'Apollo' } } });
    expect(eventSentence(created, { keyName: 'ci-deploy' }).sentence).toBe('Project "Apollo" was created by the key ci-deploy');
    const renamed = event('project.updated', { data: { changedFields: ['name'], previous: { name: 'Athena' }, record: { name: 'Apollo' } } });
    expect(eventSentence(renamed, { actor: olivia }).sentence).toBe('Project "Athena" was renamed to "Apollo" by Olivia Oakes');
    const several = event('task_item.updated', { data: { changedFields: ['status', 'title'], previous: {}, record: { title: 'Ship it' } } });
    expect(eventSentence(several, { actor: olivia }).sentence).toBe('Task item "Ship it" was changed (status and title) by Olivia Oakes');
    expect(eventSentence(event('task.deleted', { actorType: 'system', actorId: null, data: { record: {} } })).sentence).toBe('A task was deleted');
  });

  it('says an operator acted as one, about the account by its address', () => {
    const support = { name: 'Support', email: 'support@platform.example' };
    const revoked = event('operator.revoked_sessions', { actorId: olivia.id, userId: null, entity: 'User', entityId: ivy.id, data: { sessions: 3, reason: 'spam invitations' } });
    const names = namesFor(revoked, { users: new Map([[olivia.id, support], [ivy.id, { name: 'Jane', email: 'jane@acme.com' }]]), keys: new Map(), directories: new Map() });
    expect(names.actorIsOperator).toBe(true);
    expect(eventSentence(revoked, names).sentence).toBe('Support (operator) revoked 3 sessions of jane@acme.com (reason: spam invitations)');
    expect(eventSentence({ ...revoked, data: { sessions: 1 } }, names).sentence).toBe('Support (operator) revoked 1 session of jane@acme.com');
    // Granted from the command line: the system acted, no one by name.
    expect(eventSentence(event('operator.granted', { actorType: 'system', actorId: null, userId: ivy.id, data: { by: 'command line' } }), { subject: ivy }).sentence).toBe(
      'ivy@acme.example was made an operator of the platform from the command line',
    );
    // The same user acting in an organization's own event is no operator there.
    expect(eventSentence(event('invitation.sent', { data: { email: 'a@b.example', role: 'admin' } }), { actor: support }).sentence).toBe('Support invited a@b.example as admin');
  });

  it('says a directory acted, by its name', () => {
    const deprovisioned = event('directory.user_deprovisioned', { actorType: 'directory', actorId: directoryId, userId: ivy.id, entity: 'scim_user', data: { reason: 'directory-inactive', sessionsEnded: 2 } });
    const jane = { name: 'Jane Doe', email: 'jane@acme.com' };
    expect(eventSentence(deprovisioned, { directoryName: 'Okta', subject: jane }).sentence).toBe('The Okta directory deactivated jane@acme.com (2 sessions ended)');
    expect(eventSentence(deprovisioned, { directoryName: 'Entra ID directory', subject: jane }).sentence).toBe('The Entra ID directory deactivated jane@acme.com (2 sessions ended)');
    expect(eventSentence(deprovisioned, { directoryName: null, subject: jane }).sentence).toBe('A removed directory deactivated jane@acme.com (2 sessions ended)');
    const book: NameBook = { users: new Map(), keys: new Map(), directories: new Map([[directoryId, 'Okta']]) };
    expect(namesFor(deprovisioned, book)).toMatchObject({ directoryName: 'Okta', subject: null, actorIsOperator: false });
  });

  it('says a deleted actor, key or subject as such', () => {
    const book: NameBook = { users: new Map(), keys: new Map(), directories: new Map() };
    const invited = event('invitation.sent', { data: { email: 'new@acme.example', role: 'member' } });
    expect(eventSentence(invited, namesFor(invited, book)).sentence).toBe('A deleted user invited new@acme.example as member');
    const byKey = event('project.created', { actorType: 'machine_key', actorId: keyId, data: { record: { name: 'Apollo' } } });
    expect(eventSentence(byKey, namesFor(byKey, book)).sentence).toBe('Project "Apollo" was created by a revoked machine key');
    const removed = event('member.updated', { data: { changedFields: ['role'], previous: { role: 'member' }, record: { userId: ivy.id, role: 'admin' } } });
    expect(eventSentence(removed, namesFor(removed, book)).sentence).toBe("A deleted user changed a deleted user's role from member to admin");
    expect(eventSentence(event('user.deleted', { userId: ivy.id }), namesFor(event('user.deleted', { userId: ivy.id }), book)).sentence).toBe('A user deleted their account');
  });

  it('keeps hostile names plain text: no markup read, no control or direction characters, cut when long', () => {
    const hostile = { name: '<img src=x onerror=alert(1)> Eve\u202Egnp.exe\r\nInjected', email: 'eve@evil.example' };
    const { sentence } = eventSentence(event('invitation.sent', { data: { email: 'x@acme.example', role: 'member' } }), { actor: hostile });
    // The markup is kept as the characters it is (the console shows text, never HTML), on one line, without the right-to-left override.
    expect(sentence).toBe('<img src=x onerror=alert(1)> Eve gnp.exe Injected invited x@acme.example as member');
    expect(sentence).not.toMatch(/[\u202A-\u202E\r\n]/);
    const long = eventSentence(event('project.created', { data: { record: { name: 'A'.repeat(500) } } }), { actor: olivia }).sentence;
    expect(long.length).toBeLessThan(140);
    expect(long).toContain('…');
    expect(plain('a\u0000b\u200Bc')).toBe('a b c');
  });

  it('says no secret: a webhook URL only to its host, a typed password never, a key never', () => {
    const added = eventSentence(recorded('webhook_endpoint.created'), everyName).sentence;
    expect(added).toBe('Olivia Oakes added a webhook endpoint https://hooks.example.com/…');
    expect(urlShown('https://user:pass@hooks.example.com')).toBe('https://hooks.example.com');
    const typedPassword = event('session.sign_in_failed', { actorType: 'system', actorId: null, data: { email: 'correct horse battery' } });
    expect(eventSentence(typedPassword, {}).sentence).toBe('A sign-in failed (no account has the address typed)');
    const madeKey = eventSentence(recorded('key.created'), everyName).sentence;
    expect(madeKey).toBe('Olivia Oakes made the machine key ci-deploy with the member role');
    expect(eventSentence(recorded('directory.token_rotated'), everyName).sentence).not.toContain('scim_abc');
  });

  it('reads a type it has no sentence for by the catalogue, or as recorded', () => {
    expect(eventSentence(event('report.exported', { data: {} }), { actor: olivia }).sentence).toBe('Olivia Oakes recorded report.exported');
    expect(eventSentence(event('report.exported', { actorType: 'system', actorId: null }), {}).sentence).toBe('report.exported was recorded');
  });

  it('asks for each id once, and only ids that are uuids', () => {
    const events = [
      event('member.updated', { data: { record: { userId: ivy.id } } }),
      event('invitation.sent', { actorId: ivy.id }),
      event('project.created', { actorType: 'machine_key', actorId: keyId }),
      event('directory.user_updated', { actorType: 'directory', actorId: directoryId, userId: 'not-a-uuid' }),
      event('key.revoked', { entity: 'apikey', entityId: "'; DROP TABLE x; --" }),
    ];
    expect(idsNamed(events)).toEqual({ userIds: [olivia.id, ivy.id], keyIds: [keyId], directoryIds: [directoryId] });
  });
});
