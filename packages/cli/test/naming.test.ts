import { describe, expect, it } from 'vitest';
import { camelCase, collectionPath, kebabCase, pascalCase, pluralOf } from '../src/schema/naming.js';
import { validateSchema } from '../src/schema/validate.js';

describe('collectionPath', () => {
  it('pluralises a one-word name as written (DECISIONS.md §2)', () => {
    expect(collectionPath('User')).toBe('/Users');
    expect(collectionPath('account')).toBe('/accounts');
    expect(collectionPath('Organization')).toBe('/Organizations');
  });

  it('turns a multi-word name into lowercase kebab-case, pluralising the last word', () => {
    expect(collectionPath('UserSetting')).toBe('/user-settings');
    expect(collectionPath('ProjectCategory')).toBe('/project-categories');
    expect(collectionPath('APIKey')).toBe('/api-keys');
  });

  it('uses a given plural instead of the English rules', () => {
    expect(collectionPath('Person', 'People')).toBe('/People');
    expect(collectionPath('TeamPerson', 'TeamPeople')).toBe('/team-people');
  });
});

describe('pluralOf', () => {
  it('follows English rules for -y, -s/-x/-z/-ch/-sh and the rest', () => {
    expect(pluralOf('Category')).toBe('Categories');
    expect(pluralOf('Day')).toBe('Days');
    expect(pluralOf('Box')).toBe('Boxes');
    expect(pluralOf('Status')).toBe('Statuses');
    expect(pluralOf('Branch')).toBe('Branches');
    expect(pluralOf('Wish')).toBe('Wishes');
    expect(pluralOf('Task')).toBe('Tasks');
  });

  it('pluralises only the last word of a compound name', () => {
    expect(pluralOf('UserSetting')).toBe('UserSettings');
    expect(pluralOf('BoxCategory')).toBe('BoxCategories');
    expect(pluralOf('user_address')).toBe('user_addresses');
  });
});

describe('identifier casing', () => {
  it('camelCase lowers the first word and capitalises the rest', () => {
    expect(camelCase('UserSetting')).toBe('userSetting');
    expect(camelCase('account')).toBe('account');
    expect(camelCase('user_setting')).toBe('userSetting');
    expect(camelCase('HTTPRequest')).toBe('httpRequest');
  });

  it('pascalCase capitalises each word and keeps the rest of it', () => {
    expect(pascalCase('account')).toBe('Account');
    expect(pascalCase('UserSetting')).toBe('UserSetting');
    expect(pascalCase('user-setting')).toBe('UserSetting');
  });

  it('kebabCase lowers and joins the words with dashes', () => {
    expect(kebabCase('UserSetting')).toBe('user-setting');
    expect(kebabCase('User')).toBe('user');
    expect(kebabCase('HTTPRequest')).toBe('http-request');
  });
});

describe('entity paths after validation', () => {
  it('gives built-in and own entities the paths of the naming rules', () => {
    const schema = validateSchema({ entities: { UserSetting: { fields: {} }, Category: { fields: {} } } });
    const paths = Object.fromEntries(schema.entities.map((entity) => [entity.name, entity.path]));
    expect(paths).toMatchObject({
      User: '/Users',
      account: '/accounts',
      session: '/sessions',
      UserSetting: '/user-settings',
      Category: '/Categories',
    });
  });

  it('uses the "plural" override for the path and the plural', () => {
    const schema = validateSchema({
      auth: false,
      entities: { Person: { plural: 'People', fields: {} }, TeamPerson: { plural: 'TeamPeople', fields: {} } },
    });
    expect(schema.entities.map(({ name, plural, path }) => ({ name, plural, path }))).toEqual([
      { name: 'Person', plural: 'People', path: '/People' },
      { name: 'TeamPerson', plural: 'TeamPeople', path: '/team-people' },
    ]);
  });
});
