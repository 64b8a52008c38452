import { describe, expect, it } from 'vitest';
import { applyGroupPatch, applyUserPatch, patchOpSchema, type ScimResource } from '../src/scim/patch.js';
import { scimErrorOf } from './support/scim.js';

/**
 * src/scim/patch.ts (docs/enterprise-identity.md 6.2): PatchOp bodies as RFC 7644 section 3.5.2
 * writes them and as Okta and Entra ID send them (their documentation's requests, verbatim), and
 * bodies that must be refused.
 */

const coreUser = 'urn:ietf:params:scim:schemas:core:2.0:User';
const enterprise = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

const patch = (...Operations: unknown[]) => ({ schemas: [patchOpSchema], Operations });

/** Okta's user, as its SCIM 2.0 reference shows it after a create. */
function oktaUser(): ScimResource {
  return {
    schemas: [coreUser],
    id: '23a35c27-23d3-4c03-b4c5-6443c09e7173',
    userName: 'test.user@okta.local',
    name: { givenName: 'Test', familyName: 'User' },
    emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
    displayName: 'Test User',
    locale: 'en-US',
    externalId: '00ujl29u0le5T6Aj10h7',
    active: true,
    meta: { resourceType: 'User' },
  };
}

describe('the PatchOp body', () => {
  const refusals: [string, unknown, string, RegExp][] = [
    ['not an object', [], 'invalidSyntax', /must be a JSON object/],
    ['without schemas', { Operations: [{ op: 'add', path: 'title', value: 'x' }] }, 'invalidSyntax', /"schemas" must list "urn:ietf:params:scim:api:messages:2.0:PatchOp"/],
    ['with a resource schema', { schemas: [coreUser], Operations: [{ op: 'add', path: 'title', value: 'x' }] }, 'invalidSyntax', /"schemas" must list/],
    ['without Operations', { schemas: [patchOpSchema] }, 'invalidSyntax', /"Operations" must be a non-empty array/],
    ['with no operation', patch(), 'invalidSyntax', /"Operations" must be a non-empty array/],
    ['with an operation that is not an object', patch('add'), 'invalidSyntax', /Operations\[0\] must be an object/],
    ['with an unknown op', patch({ op: 'move', path: 'title', value: 'x' }), 'invalidSyntax', /Operations\[0\]\.op must be "add", "replace" or "remove", not "move"/],
    ['without op', patch({ path: 'title', value: 'x' }), 'invalidSyntax', /not missing/],
    ['with a path that is not a string', patch({ op: 'add', path: 7, value: 'x' }), 'invalidPath', /Operations\[0\]\.path must be a string/],
    ['with a remove without path', patch({ op: 'remove' }), 'noTarget', /"remove" needs a "path"/],
    ['with an add without value', patch({ op: 'add', path: 'title' }), 'invalidSyntax', /"add" needs a "value"/],
    ['with a malformed path', patch({ op: 'add', path: 'title', value: 'x' }, { op: 'add', path: 'emails[type eq', value: 'x' }), 'invalidPath', /^Operations\[1\]\.path: Invalid path: expected a value .* at character 15/],
  ];

  it.each(refusals)('is refused %s', (_, body, scimType, detail) => {
    const error = scimErrorOf(() => applyUserPatch(oktaUser(), body));
    expect(error.status).toBe(400);
    expect(error.scimType).toBe(scimType);
    expect(error.detail).toMatch(detail);
  });

  it('takes op in any case and Operations under any case of its name', () => {
    const { resource } = applyUserPatch(oktaUser(), { schemas: [patchOpSchema], operations: [{ OP: 'rEpLaCe', Path: 'title', Value: 'Boss' }] });
    expect(resource.title).toBe('Boss');
  });
});

describe('PATCH of a User, as Okta sends it', () => {
  it('deactivates with a replace of a map without path, and the same PATCH again changes nothing', () => {
    const body = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', value: { active: false } }] };
    const first = applyUserPatch(oktaUser(), body);
    expect(first).toEqual({ resource: { ...oktaUser(), active: false }, changed: true });
    expect(applyUserPatch(first.resource, body)).toEqual({ resource: first.resource, changed: false });
  });

  it('leaves the stored representation it was given as it was', () => {
    const stored = oktaUser();
    applyUserPatch(stored, patch({ op: 'replace', path: 'emails[type eq "work"].value', value: 'new@okta.local' }, { op: 'remove', path: 'name' }));
    expect(stored).toEqual(oktaUser());
  });

  it('ignores a password, which is never stored', () => {
    expect(applyUserPatch(oktaUser(), patch({ op: 'replace', value: { password: 't1meMa$heen' } }))).toEqual({ resource: oktaUser(), changed: false });
  });
});

describe('PATCH of a User, as Entra ID sends it', () => {
  it('disables with "Replace" and the string "False", and enables with "True"', () => {
    const disabled = applyUserPatch(oktaUser(), patch({ op: 'Replace', path: 'active', value: 'False' }));
    expect(disabled.resource.active).toBe(false);
    expect(applyUserPatch(disabled.resource, patch({ op: 'Replace', path: 'active', value: 'True' })).resource.active).toBe(true);
    expect(applyUserPatch(oktaUser(), patch({ op: 'replace', path: 'active', value: false })).resource.active).toBe(false);
    expect(scimErrorOf(() => applyUserPatch(oktaUser(), patch({ op: 'Replace', path: 'active', value: 'no' })))).toMatchObject({
      scimType: 'invalidValue',
      detail: '"active" takes true or false, not "no"',
    });
  });

  it('updates the work address and the family name ("Update User [Multi-valued properties]")', () => {
    const body = {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
      ],
    };
    const { resource, changed } = applyUserPatch(oktaUser(), body);
    expect(changed).toBe(true);
    expect(resource.emails).toEqual([{ primary: true, value: 'updatedEmail@microsoft.com', type: 'work' }]);
    expect(resource.name).toEqual({ givenName: 'Test', familyName: 'updatedFamilyName' });
  });

  it('creates the work address when the user has none, on Replace and on Add', () => {
    const withoutEmails = { ...oktaUser(), emails: [{ value: 'home@example.com', type: 'home' }] };
    for (const op of ['Replace', 'Add']) {
      const { resource } = applyUserPatch(withoutEmails, patch({ op, path: 'emails[type eq "work"].value', value: 'work@example.com' }));
      expect(resource.emails).toEqual([
        { value: 'home@example.com', type: 'home' },
        { type: 'work', value: 'work@example.com' },
      ]);
    }
  });

  it('replaces several attributes, an enterprise one among them (without the aadOptscim062020 flag)', () => {
    const body = {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [
        { op: 'Replace', path: 'displayName', value: 'Pvlo' },
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'TestBcwqnm@test.microsoft.com' },
        { op: 'Replace', path: 'name.givenName', value: 'Gtfd' },
        { op: 'Replace', path: 'name.familyName', value: 'Pkqf' },
        { op: 'Replace', path: 'externalId', value: 'Eqpj' },
        { op: 'Replace', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber', value: 'Eqpj' },
      ],
    };
    expect(applyUserPatch(oktaUser(), body).resource).toEqual({
      ...oktaUser(),
      schemas: [coreUser, enterprise],
      displayName: 'Pvlo',
      emails: [{ primary: true, value: 'TestBcwqnm@test.microsoft.com', type: 'work' }],
      name: { givenName: 'Gtfd', familyName: 'Pkqf' },
      externalId: 'Eqpj',
      [enterprise]: { employeeNumber: 'Eqpj' },
    });
  });

  it('replaces several attributes through a map with dotted and URN-prefixed keys (with the aadOptscim062020 flag)', () => {
    const body = {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [
        { op: 'replace', path: 'emails[type eq "work"].value', value: 'TestMhvaes@test.microsoft.com' },
        {
          op: 'replace',
          value: {
            displayName: 'Bjfe',
            'name.givenName': 'Kkom',
            'name.familyName': 'Unua',
            'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber': 'Aklq',
          },
        },
      ],
    };
    const { resource, changed } = applyUserPatch(oktaUser(), body);
    expect(changed).toBe(true);
    expect(resource).toEqual({
      ...oktaUser(),
      schemas: [coreUser, enterprise],
      displayName: 'Bjfe',
      emails: [{ primary: true, value: 'TestMhvaes@test.microsoft.com', type: 'work' }],
      name: { givenName: 'Kkom', familyName: 'Unua' },
      [enterprise]: { employeeNumber: 'Aklq' },
    });
    expect(applyUserPatch(resource, body).changed).toBe(false);
  });

  it('adds a single-valued attribute with "Add", and a second Add replaces it', () => {
    const first = applyUserPatch(oktaUser(), { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'Add', path: 'nickName', value: 'Babs' }] });
    expect(first.resource.nickName).toBe('Babs');
    expect(applyUserPatch(first.resource, patch({ op: 'add', path: 'nickName', value: 'Barb' })).resource.nickName).toBe('Barb');
  });

  it('changes userName ("Update User [Single-valued properties]")', () => {
    const body = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'Replace', path: 'userName', value: '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com' }] };
    expect(applyUserPatch(oktaUser(), body).resource.userName).toBe('5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com');
  });

  it('writes the department and the manager (sent as a bare id) of the enterprise extension', () => {
    const { resource } = applyUserPatch(
      oktaUser(),
      patch(
        { op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', value: 'IT' },
        { op: 'Replace', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager', value: '26118915-6090-4610-87a4-49d0c3b1f8e8' },
      ),
    );
    expect(resource[enterprise]).toEqual({ department: 'IT', manager: { value: '26118915-6090-4610-87a4-49d0c3b1f8e8' } });
    const removed = applyUserPatch(
      resource,
      patch({ op: 'Remove', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department' }, { op: 'Remove', path: `${enterprise}:manager` }),
    );
    // An extension left empty is gone, and so is its URN from schemas.
    expect(removed.resource).toEqual(oktaUser());
  });

  it('writes addresses[type eq "work"].formatted, and phoneNumbers the same way', () => {
    const { resource } = applyUserPatch(
      oktaUser(),
      patch(
        { op: 'Add', path: 'addresses[type eq "work"].formatted', value: '1 Microsoft Way' },
        { op: 'Add', path: 'addresses[type eq "work"].postalCode', value: '98052' },
        { op: 'Add', path: 'phoneNumbers[type eq "mobile"].value', value: '+1 555 0100' },
      ),
    );
    expect(resource.addresses).toEqual([{ type: 'work', formatted: '1 Microsoft Way', postalCode: '98052' }]);
    expect(resource.phoneNumbers).toEqual([{ type: 'mobile', value: '+1 555 0100' }]);
  });

  it('accepts and ignores an extension this server does not keep', () => {
    const custom = 'urn:ietf:params:scim:schemas:extension:CustomExtensionName:2.0:User';
    const body = patch(
      { op: 'Add', path: `${custom}:tag`, value: '701984' },
      { op: 'replace', value: { [custom]: { tag: '701984' }, [`${custom}:worksiteId`]: '180' } },
    );
    expect(applyUserPatch(oktaUser(), body)).toEqual({ resource: oktaUser(), changed: false });
  });
});

describe('PATCH of a User, by RFC 7644 section 3.5.2', () => {
  it('adds to a multi-valued attribute, not twice the same value', () => {
    const home = { value: 'monalisa@octocat.github.com', type: 'home' };
    const added = applyUserPatch(oktaUser(), patch({ op: 'add', path: 'emails', value: [home] }));
    expect(added.resource.emails).toEqual([{ primary: true, value: 'test.user@okta.local', type: 'work' }, home]);
    expect(applyUserPatch(added.resource, patch({ op: 'add', path: 'emails', value: [home] })).changed).toBe(false);
  });

  it('gives primary to the value just made primary, taking it from the others', () => {
    const { resource } = applyUserPatch(oktaUser(), patch({ op: 'add', path: 'emails', value: [{ value: 'b@example.com', type: 'other', primary: 'True' }] }));
    expect(resource.emails).toEqual([
      { primary: false, value: 'test.user@okta.local', type: 'work' },
      { value: 'b@example.com', type: 'other', primary: true },
    ]);
  });

  it('replaces a whole multi-valued attribute, and removes it without a filter', () => {
    const replaced = applyUserPatch(oktaUser(), patch({ op: 'replace', path: 'emails', value: [{ value: 'only@example.com' }] }));
    expect(replaced.resource.emails).toEqual([{ value: 'only@example.com' }]);
    expect(applyUserPatch(oktaUser(), patch({ op: 'remove', path: 'emails' })).resource).not.toHaveProperty('emails');
  });

  it('removes the elements a filter selects, and refuses a filter that selects none (noTarget)', () => {
    const two = { ...oktaUser(), emails: [{ value: 'w@example.com', type: 'work' }, { value: 'h@example.com', type: 'home' }] };
    expect(applyUserPatch(two, patch({ op: 'remove', path: 'emails[type eq "work"]' })).resource.emails).toEqual([{ value: 'h@example.com', type: 'home' }]);
    expect(applyUserPatch(two, patch({ op: 'remove', path: 'emails[type eq "home"].type' })).resource.emails).toEqual([
      { value: 'w@example.com', type: 'work' },
      { value: 'h@example.com' },
    ]);
    expect(scimErrorOf(() => applyUserPatch(two, patch({ op: 'remove', path: 'emails[type eq "other"]' })))).toMatchObject({
      status: 400,
      scimType: 'noTarget',
      detail: 'No element of "emails" matches "emails[type eq "other"]"',
    });
  });

  it('refuses to create an element a filter does not describe with eq', () => {
    expect(scimErrorOf(() => applyUserPatch(oktaUser(), patch({ op: 'replace', path: 'emails[type co "xyz"].value', value: 'x@example.com' }))).scimType).toBe('noTarget');
  });

  it('merges the sub-attributes given into a complex attribute, and removes it whole', () => {
    expect(applyUserPatch(oktaUser(), patch({ op: 'replace', path: 'name', value: { givenName: 'Another', middleName: 'Excited' } })).resource.name).toEqual({
      givenName: 'Another',
      middleName: 'Excited',
      familyName: 'User',
    });
    expect(applyUserPatch(oktaUser(), patch({ op: 'remove', path: 'name' })).resource).not.toHaveProperty('name');
    expect(applyUserPatch(oktaUser(), patch({ op: 'remove', path: 'name.givenName' }, { op: 'remove', path: 'name.familyName' })).resource).not.toHaveProperty('name');
  });

  it('reads attribute names in any case and stores them as the schema spells them', () => {
    const { resource } = applyUserPatch(
      oktaUser(),
      patch({ op: 'replace', path: 'Name.GIVENNAME', value: 'G' }, { op: 'replace', path: 'EMAILS[TYPE eq "Work"].VALUE', value: 'w@example.com' }, { op: 'add', value: { NICKNAME: 'n' } }),
    );
    expect(resource.name).toEqual({ givenName: 'G', familyName: 'User' });
    expect(resource.emails).toEqual([{ primary: true, value: 'w@example.com', type: 'work' }]);
    expect(resource.nickName).toBe('n');
    expect(resource).not.toHaveProperty('NICKNAME');
  });

  it('refuses to remove userName or write a read-only attribute (mutability), but skips read-only ones in a map', () => {
    for (const operation of [{ op: 'remove', path: 'userName' }, { op: 'replace', path: 'userName', value: null }, { op: 'replace', path: 'id', value: 'x' }]) {
      expect(scimErrorOf(() => applyUserPatch(oktaUser(), patch(operation))).scimType).toBe('mutability');
    }
    const skipped = applyUserPatch(oktaUser(), patch({ op: 'replace', value: { id: 'other', meta: {}, groups: [], schemas: [], title: 'T' } }));
    expect(skipped.resource).toEqual({ ...oktaUser(), title: 'T' });
  });

  it('refuses unknown attributes and sub-attributes as invalidPath, and values of the wrong type as invalidValue', () => {
    const cases: [unknown, string, RegExp][] = [
      [{ op: 'add', path: 'favouriteColour', value: 'blue' }, 'invalidPath', /a User has no attribute "favouriteColour"/],
      [{ op: 'add', path: 'name.nickname', value: 'x' }, 'invalidPath', /"name" has no sub-attribute "nickname"/],
      [{ op: 'add', path: 'emails[kind eq "work"].value', value: 'x' }, 'invalidPath', /emails has no sub-attribute 'kind'; it has value, display, type, primary/],
      [{ op: 'add', path: 'title.x', value: 'x' }, 'invalidPath', /"title" has no sub-attributes/],
      [{ op: 'add', path: 'urn:ietf:params:scim:schemas:core:2.0:Group:displayName', value: 'x' }, 'invalidPath', /is not the schema of a User/],
      [{ op: 'add', path: 'title', value: 7 }, 'invalidValue', /"title" takes a string, not 7/],
      [{ op: 'add', path: 'emails', value: ['a@example.com'] }, 'invalidValue', /"emails" takes objects/],
      [{ op: 'add', path: 'emails', value: [{ value: 'a@example.com', kind: 'x' }] }, 'invalidValue', /"emails" has no sub-attribute "kind"/],
      [{ op: 'replace', value: 'active' }, 'invalidValue', /without a "path" takes an object of attributes/],
      [{ op: 'replace', path: 'userName', value: '' }, 'invalidValue', /"userName" cannot be empty/],
      [{ op: 'replace', value: { 'emails[type': 'x' } }, 'invalidPath', /the attribute "emails\[type" of "value": Invalid path/],
    ];
    for (const [operation, scimType, detail] of cases) {
      const error = scimErrorOf(() => applyUserPatch(oktaUser(), patch(operation)));
      expect(error.scimType, JSON.stringify(operation)).toBe(scimType);
      expect(error.detail, JSON.stringify(operation)).toMatch(detail);
    }
  });
});

describe('PATCH of a User: hostile bodies', () => {
  it('answers schemas nested inside one another with a ScimError, not a stack overflow', () => {
    let core: unknown = { title: 'x' };
    let extension: unknown = { department: 'x' };
    for (let level = 0; level < 10_000; level++) {
      core = { [coreUser]: core };
      extension = { [enterprise]: extension };
    }
    expect(scimErrorOf(() => applyUserPatch(oktaUser(), patch({ op: 'replace', value: core }))).scimType).toBe('invalidPath');
    expect(scimErrorOf(() => applyUserPatch(oktaUser(), patch({ op: 'replace', value: extension }))).scimType).toBe('invalidValue');
  });

  it('never writes __proto__ or constructor, and refuses a path past the length limit', () => {
    const body = JSON.parse('{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"add","value":{"__proto__":{"polluted":true}}}]}');
    expect(scimErrorOf(() => applyUserPatch(oktaUser(), body)).scimType).toBe('invalidPath');
    expect(scimErrorOf(() => applyUserPatch(oktaUser(), patch({ op: 'add', path: 'name', value: { constructor: 'x' } }))).scimType).toBe('invalidValue');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(scimErrorOf(() => applyUserPatch(oktaUser(), patch({ op: 'add', path: `title${' '.repeat(2000)}`, value: 'x' }))).detail).toMatch(/2005 characters/);
  });
});

const groupId = 'abf4dd94-a4c0-4f67-89c9-76b03340cb9b';
const storedGroup = (): ScimResource => ({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], id: groupId, displayName: 'Test SCIMv2', meta: { resourceType: 'Group' } });
const noMemberChanges = { add: [], remove: [], removeAll: false };

describe('PATCH of a Group', () => {
  it("renames with Okta's map without path, which also carries the read-only id", () => {
    const body = {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { id: 'abf4dd94-a4c0-4f67-89c9-76b03340cb9b', displayName: 'Test SCIMv20' } }],
    };
    expect(applyGroupPatch(storedGroup(), body)).toEqual({ resource: { ...storedGroup(), displayName: 'Test SCIMv20' }, changed: true, members: noMemberChanges });
    // Okta sends the rename with every membership change: the same name changes nothing.
    expect(applyGroupPatch({ ...storedGroup(), displayName: 'Test SCIMv20' }, body).changed).toBe(false);
  });

  it("renames with Entra ID's Replace of displayName", () => {
    const body = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'Replace', path: 'displayName', value: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName' }] };
    expect(applyGroupPatch(storedGroup(), body).resource.displayName).toBe('1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName');
  });

  it("reports Okta's membership update (a remove by filter, then an add) as member changes, never as members in the resource", () => {
    const body = {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [
        { op: 'remove', path: 'members[value eq "89bb1940-b905-4575-9e7f-6f887cfb368e"]' },
        { op: 'add', path: 'members', value: [{ value: '23a35c27-23d3-4c03-b4c5-6443c09e7173', display: 'test.user@okta.local' }] },
      ],
    };
    expect(applyGroupPatch(storedGroup(), body)).toEqual({
      resource: storedGroup(),
      changed: false,
      members: { add: ['23a35c27-23d3-4c03-b4c5-6443c09e7173'], remove: ['89bb1940-b905-4575-9e7f-6f887cfb368e'], removeAll: false },
    });
  });

  it("reports Okta's full push of members (replace) as the whole membership", () => {
    const body = {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [
        {
          op: 'replace',
          path: 'members',
          value: [
            { value: '23a35c27-23d3-4c03-b4c5-6443c09e7173', display: 'test.user@okta.local' },
            { value: '89bb1940-b905-4575-9e7f-6f887cfb368e', display: 'test.user@okta.local' },
          ],
        },
      ],
    };
    const whole = ['23a35c27-23d3-4c03-b4c5-6443c09e7173', '89bb1940-b905-4575-9e7f-6f887cfb368e'];
    expect(applyGroupPatch(storedGroup(), body).members).toEqual({ add: whole, remove: [], removeAll: true, replace: whole });
  });

  it("reads Entra ID's Add and Remove of members, with \"$ref\": null, and its removal by filter", () => {
    const add = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: 'f648f8d5ea4e4cd38e9c' }] }] };
    expect(applyGroupPatch(storedGroup(), add).members).toEqual({ ...noMemberChanges, add: ['f648f8d5ea4e4cd38e9c'] });
    const remove = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: 'f648f8d5ea4e4cd38e9c' }] }] };
    expect(applyGroupPatch(storedGroup(), remove).members).toEqual({ ...noMemberChanges, remove: ['f648f8d5ea4e4cd38e9c'] });
    const byFilter = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'remove', path: 'members[value eq "7f4bc1a3-285e-48ae-8202-5accb43efb0e"]' }] };
    expect(applyGroupPatch(storedGroup(), byFilter).members).toEqual({ ...noMemberChanges, remove: ['7f4bc1a3-285e-48ae-8202-5accb43efb0e'] });
  });

  it('empties the group on a remove of members without a filter, and keeps the order of operations', () => {
    expect(applyGroupPatch(storedGroup(), patch({ op: 'remove', path: 'members' })).members).toEqual({ add: [], remove: [], removeAll: true, replace: [] });
    expect(applyGroupPatch(storedGroup(), patch({ op: 'remove', path: 'members' }, { op: 'add', path: 'members', value: [{ value: 'a' }] })).members).toEqual({
      add: ['a'],
      remove: [],
      removeAll: true,
      replace: ['a'],
    });
    expect(applyGroupPatch(storedGroup(), patch({ op: 'remove', path: 'members[value eq "a"]' }, { op: 'add', path: 'members', value: [{ value: 'a' }] })).members).toEqual({
      ...noMemberChanges,
      add: ['a'],
    });
    expect(applyGroupPatch(storedGroup(), patch({ op: 'add', path: 'members', value: [{ value: 'a' }, { value: 'b' }] }, { op: 'remove', path: 'members[value eq "a" or value eq "c"]' })).members).toEqual({
      add: ['b'],
      remove: ['a', 'c'],
      removeAll: false,
    });
    expect(applyGroupPatch(storedGroup(), patch({ op: 'replace', path: 'members', value: [{ value: 'a' }] }, { op: 'remove', path: 'members[value eq "a"]' }, { op: 'add', value: { members: [{ value: 'b' }] } })).members).toEqual({
      add: ['b'],
      remove: [],
      removeAll: true,
      replace: ['b'],
    });
  });

  it('refuses member paths it cannot apply without reading every member, and members that are not {value}', () => {
    const cases: [unknown, string][] = [
      [{ op: 'remove', path: 'members[display eq "x"]' }, 'invalidPath'],
      [{ op: 'replace', path: 'members[value eq "a"]', value: [{ value: 'b' }] }, 'invalidPath'],
      [{ op: 'replace', path: 'members[value eq "a"].display', value: 'x' }, 'invalidPath'],
      [{ op: 'add', path: 'members', value: ['a'] }, 'invalidValue'],
      [{ op: 'add', path: 'members', value: [{ display: 'a' }] }, 'invalidValue'],
      [{ op: 'remove', path: 'displayName' }, 'mutability'],
      [{ op: 'add', path: 'userName', value: 'x' }, 'invalidPath'],
    ];
    for (const [operation, scimType] of cases) {
      expect(scimErrorOf(() => applyGroupPatch(storedGroup(), patch(operation))).scimType, JSON.stringify(operation)).toBe(scimType);
    }
  });
});
