import { adapterVersion } from './adapter-version.js';
import { apiDocs } from './api-docs.js';
import { authEndpoints } from './auth-endpoints.js';
import type { Check, CheckResult, Finding } from './check.js';
import { corsOrigin } from './cors-origin.js';
import { credentialProvider } from './credential-provider.js';
import { databaseConnected } from './database-connected.js';
import { databaseReplication } from './database-replication.js';
import { idField } from './id-field.js';
import { loopbackHostsCheck } from './loopback-hosts.js';
import { moduleWiring } from './module-wiring.js';
import { nameClash } from './name-clash.js';
import { notNullRows } from './not-null-rows.js';
import { ownedUpgrades } from './owned-upgrades.js';
import { nullability } from './nullability.js';
import { operatorRoutes, operators } from './operators.js';
import { realtime } from './realtime.js';
import { rowLevelSecurity } from './row-level-security.js';
import type { ProjectSnapshot } from './project-snapshot.js';
import { serverUp } from './server-up.js';
import { serviceCredential } from './service-credential.js';
import { session } from './session.js';
import { signIn } from './sign-in.js';
import { signUp } from './sign-up.js';
import { ssoConnections } from './sso-connections.js';
import { tables } from './tables.js';
import { tenantIsolation } from './tenant-isolation.js';

/**
 * Every check, in the order both commands report them: `fix` examines the project with each one
 * that has an `examine`; `verify` runs all of them (the examines in a project folder, the probes
 * against the backend). The HTTP probes run in this order too, so sign-up comes before the
 * checks that act as the people it signs up, and cors-origin before loopback-hosts, whose
 * repair builds on its .env.
 */
export const checks: Check[] = [
  serverUp,
  databaseConnected,
  apiDocs,
  nameClash,
  idField,
  moduleWiring,
  signUp,
  signIn,
  session,
  authEndpoints,
  tenantIsolation,
  realtime,
  operatorRoutes,
  serviceCredential,
  corsOrigin,
  loopbackHostsCheck,
  adapterVersion,
  tables,
  databaseReplication,
  operators,
  ssoConnections,
  credentialProvider,
  nullability,
  notNullRows,
  rowLevelSecurity,
  ownedUpgrades,
];

/** `fix`'s analysis: the examine of every check that has one, each seeing the files the repairs before it planned. Pure. */
export function examineProject(project: ProjectSnapshot): CheckResult[] {
  const planned: Record<string, string> = {};
  return checks.flatMap((check) => {
    if (!check.examine) return [];
    const finding: Finding = check.examine(project, planned);
    for (const file of finding.repair?.files ?? []) planned[file.path] = file.after;
    return [{ id: check.id, title: check.title, ...finding }];
  });
}
