/** How entity names become REST paths and code identifiers. Pure string functions. */

/** Splits `UserSetting`, `user_setting`, `user-setting` into `['User', 'Setting']`. */
export function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[\s_-]+/)
    .filter(Boolean);
}

/** English plural of one word, keeping its case: `User` -> `Users`, `category` -> `categories`. */
export function pluralize(word: string): string {
  if (/[^aeiou]y$/i.test(word)) return word.slice(0, -1) + (word.endsWith('Y') ? 'IES' : 'ies');
  if (/(s|x|z|ch|sh)$/i.test(word)) return word + (/[A-Z]$/.test(word) ? 'ES' : 'es');
  return word + (/[A-Z]{2,}$/.test(word) ? 'S' : 's');
}

/** The plural of an entity name: only the last word is pluralised. */
export function pluralOf(entityName: string): string {
  const parts = words(entityName);
  if (parts.length <= 1) return pluralize(entityName);
  const last = parts.pop()!;
  return entityName.slice(0, entityName.length - last.length) + pluralize(last);
}

/**
 * The collection path: a one-word name is pluralised as written (`User` -> `/Users`,
 * `account` -> `/accounts`); a multi-word name becomes kebab-case (`UserSetting` ->
 * `/user-settings`). Routes match case-insensitively, so `/users` reaches `/Users` too.
 */
export function collectionPath(entityName: string, plural = pluralOf(entityName)): string {
  const parts = words(plural);
  if (parts.length <= 1) return `/${plural}`;
  return `/${parts.map((part) => part.toLowerCase()).join('-')}`;
}

/** `UserSetting` -> `userSetting`, `account` -> `account`: for variables and functions. */
export function camelCase(name: string): string {
  const parts = words(name);
  return parts
    .map((part, index) =>
      index === 0 ? part.toLowerCase() : part[0]!.toUpperCase() + part.slice(1).toLowerCase(),
    )
    .join('');
}

/** `account` -> `Account`, `UserSetting` -> `UserSetting`: for types and schemas. */
export function pascalCase(name: string): string {
  return words(name)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');
}

/** `UserSetting` -> `user-setting`: for file names. */
export function kebabCase(name: string): string {
  return words(name)
    .map((part) => part.toLowerCase())
    .join('-');
}
