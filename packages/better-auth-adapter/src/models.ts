/**
 * Where each Better Auth model lives in an authstrap backend: its REST collection, and the field
 * names the backend uses where they differ from Better Auth's. Only these differ: the backend's
 * `User.email_verified` is the spec's name for Better Auth's `emailVerified`.
 */

const renamedFields: Record<string, Record<string, string>> = {
  user: { emailVerified: 'email_verified' },
};

/** Better Auth field -> the backend's field, for one model. */
export function toBackendField(model: string, field: string): string {
  return renamedFields[model]?.[field] ?? field;
}

/** A record from the backend with Better Auth's field names. */
export function fromBackendRecord(model: string, record: Record<string, unknown>): Record<string, unknown> {
  const renames = renamedFields[model];
  if (!renames) return record;
  const result = { ...record };
  for (const [betterAuthName, backendName] of Object.entries(renames)) {
    if (backendName in result) {
      result[betterAuthName] = result[backendName];
      delete result[backendName];
    }
  }
  return result;
}

/** A record for the backend: Better Auth's field names replaced by the backend's. */
export function toBackendRecord(model: string, record: Record<string, unknown>): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(record)) {
    if (value !== undefined) result[toBackendField(model, field)] = value;
  }
  return result;
}

/** The built-in entities' names in authstrap (`User` is PascalCase, as the spec has it). */
const entityNames: Record<string, string> = {
  user: 'User',
  session: 'session',
  account: 'account',
  verification: 'verification',
  organization: 'Organization',
  member: 'member',
};

/**
 * The authstrap entity a Better Auth model is kept in: built-in ones by name, others as named,
 * with `_` and `-` words joined in camelCase (`one_to_one_table` -> `oneToOneTable`), since an
 * entity name is letters and digits.
 */
export const entityNameOf = (model: string): string =>
  entityNames[model] ?? model.replace(/[_-]+([A-Za-z0-9])/g, (_, letter: string) => letter.toUpperCase()).replace(/[_-]/g, '');

/**
 * The collection path of an entity, as authstrap names it: the plural of a one-word name
 * (`/Users`, `/sessions`), kebab-case for several words (`twoFactor` -> `/two-factors`).
 */
export function collectionPathOf(model: string): string {
  // The same words as authstrap's schema/naming.ts finds, so both name the same path.
  const words = entityNameOf(model)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[\s_-]+/)
    .filter(Boolean);
  const last = words.pop() ?? model;
  const plural = /[^aeiou]y$/i.test(last) ? `${last.slice(0, -1)}ies` : /(s|x|z|ch|sh)$/i.test(last) ? `${last}es` : `${last}s`;
  const all = [...words, plural];
  return all.length === 1 ? `/${plural}` : `/${all.map((word) => word.toLowerCase()).join('-')}`;
}
