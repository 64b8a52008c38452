/**
 * The data model of this backend. Change it and run `npx authstrap generate`: tables,
 * migrations, validation, routes and the OpenAPI document follow from it. The auth entities
 * (User, account, session, verification) and the tenant model (Organization, member) are
 * built in while `auth` is true. Every option, renaming and what generate refuses:
 * node_modules/authstrap/docs/schema.md
 */
export default {
  auth: true,
  entities: {
    // An example to start from: every project belongs to one organization.
    Project: {
      fields: {
        name: { type: 'string', minLength: 2, maxLength: 200 },
        description: { type: 'text', nullable: true, maxLength: 5000 },
        status: { type: 'enum', values: ['active', 'archived'], default: 'active' },
      },
    },
  },
};
