import { z } from 'zod';

/** A member's role in an organization: owners and admins manage people, members work on the data. */
export const RoleSchema = z.enum(['owner', 'admin', 'member']);
export type Role = z.infer<typeof RoleSchema>;
