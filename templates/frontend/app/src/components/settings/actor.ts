/**
 * Who or what made an event of the audit log, in words, from what the event records (its
 * `actorType` and `actorId`). Pure: the names come from the caller.
 */

/** The names actors are known by: members' (user id -> name) and machine keys' (key id -> name). */
export interface ActorNames {
  members: ReadonlyMap<string, string>;
  machineKeys: ReadonlyMap<string, string>;
}

/** What an event records of its actor (the audit log's and the webhook payload's `actorType`, `actorId`). */
export interface Actor {
  actorType: string;
  actorId: string | null;
  /** The event's type: an `operator.*` event's acting user is an operator of the platform, not a member. */
  type?: string;
}

/**
 * A member by name; an operator of the platform (support: banning a member, signing in as them),
 * who is no member, as such; one of the organization's machine keys by its name; the backend's service key
 * (the app's own server acting, Better Auth through the adapter); authstrap itself (say, a webhook
 * endpoint it disabled after failures). A user or key it has no name for is said as such: the
 * caller shows the id beside it (`unnamed`).
 */
export function actorInWords(actor: Actor, names: ActorNames): string {
  const { actorType, actorId } = actor;
  switch (actorType) {
    case 'user':
      if (actorId && names.members.has(actorId)) return names.members.get(actorId)!;
      return actor.type?.startsWith('operator.') ? 'An operator of the platform' : 'A former member';
    case 'machine_key': {
      const name = actorId && names.machineKeys.get(actorId);
      return name ? `A machine key: ${name}` : 'A machine key';
    }
    case 'service':
      return 'The service key';
    case 'system':
      return 'authstrap (system)';
    default:
      return actorType;
  }
}

/** Whether the actor is a user or key the names do not hold (a former member, a key whose creation is no longer kept): its id is all there is. */
export function unnamed(actor: Actor, names: ActorNames): boolean {
  if (!actor.actorId) return false;
  if (actor.actorType === 'user') return !names.members.has(actor.actorId);
  if (actor.actorType === 'machine_key') return !names.machineKeys.has(actor.actorId);
  return false;
}
