import { describe, expect, it } from 'vitest';
import { actorInWords, unnamed, type ActorNames } from '../../../templates/frontend/app/src/components/settings/actor.js';

/**
 * Who made an audit event, in the words the console's audit log shows (the file as the app gets
 * it). frontend-console.test.ts shows a member's and a machine key's in Chromium.
 */

const names: ActorNames = { members: new Map([['u1', 'Olivia Owner']]), machineKeys: new Map([['k1', 'Importer']]) };

describe('actorInWords', () => {
  it('names a member, a machine key, the service key and authstrap itself', () => {
    expect(actorInWords({ actorType: 'user', actorId: 'u1' }, names)).toBe('Olivia Owner');
    expect(actorInWords({ actorType: 'machine_key', actorId: 'k1' }, names)).toBe('A machine key: Importer');
    expect(actorInWords({ actorType: 'service', actorId: null }, names)).toBe('The service key');
    expect(actorInWords({ actorType: 'system', actorId: null }, names)).toBe('authstrap (system)');
  });

  it("says an operator's action (a ban, signing in as a member) is the platform's operator's, not a former member's", () => {
    expect(actorInWords({ actorType: 'user', actorId: 'o1', type: 'operator.impersonation_started' }, names)).toBe('An operator of the platform');
    expect(actorInWords({ actorType: 'user', actorId: 'o1', type: 'project.updated' }, names)).toBe('A former member');
  });

  it('says what it is when it has no name, and marks it so that its id is shown', () => {
    expect(actorInWords({ actorType: 'user', actorId: 'u2' }, names)).toBe('A former member');
    expect(actorInWords({ actorType: 'machine_key', actorId: 'k2' }, names)).toBe('A machine key');
    expect(unnamed({ actorType: 'user', actorId: 'u2' }, names)).toBe(true);
    expect(unnamed({ actorType: 'machine_key', actorId: 'k2' }, names)).toBe(true);
    expect(unnamed({ actorType: 'user', actorId: 'u1' }, names)).toBe(false);
    expect(unnamed({ actorType: 'machine_key', actorId: 'k1' }, names)).toBe(false);
    expect(unnamed({ actorType: 'service', actorId: null }, names)).toBe(false);
  });
});
