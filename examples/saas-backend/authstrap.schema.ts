/**
 * The data model of this backend. `authstrap generate` turns it into tables, migrations,
 * validation, routes and the OpenAPI document. The auth entities (User, account, session,
 * verification) and the tenant model (Organization, member) are built in while `auth` is true.
 */
export default {
  auth: true,
  entities: {
    // Tenant-scoped (the default): every project belongs to one organization.
    Project: {
      fields: {
        name: { type: 'string', minLength: 2, maxLength: 200 },
        description: { type: 'text', nullable: true, maxLength: 5000 },
        status: { type: 'enum', values: ['active', 'archived'], default: 'active' },
      },
    },
    // Also reachable as /Projects/:projectId/Tasks.
    Task: {
      parent: 'projectId',
      fields: {
        projectId: { type: 'uuid', references: 'Project', onDelete: 'cascade' },
        title: { type: 'string', minLength: 1, maxLength: 200, searchable: true },
        status: { type: 'enum', values: ['todo', 'doing', 'done'], default: 'todo' },
        dueAt: { type: 'datetime', nullable: true },
        points: { type: 'integer', nullable: true, min: 0 },
      },
      // Lists filter on any field (?dueAt[lt]=...); an index makes the frequent ones cheap.
      indexes: [['dueAt']],
    },
  },
};
