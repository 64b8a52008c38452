'use client';

import { useMemo, useState, type ReactNode } from 'react';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { CopyButton } from '@/components/ui/copy-button';
import { ShownOnce } from '@/components/ui/shown-once';
import { LoadError, useLoad } from '@/components/ui/load';
import { AuthstrapError, type Role, type ScimDirectory, type ScimDirectoryGroup, type ScimDirectoryUser, type ScimRequest } from '@/lib/authstrap-client';
import { api } from '@/lib/api';
import { NoOrganization, Refusal } from './refusal';

const presets: { value: ScimDirectory['preset']; label: string }[] = [
  { value: 'okta', label: 'Okta' },
  { value: 'entra', label: 'Microsoft Entra ID' },
  { value: 'google', label: 'Google Workspace' },
  { value: 'generic', label: 'Another SCIM 2.0 client' },
];
const presetLabel = (preset: ScimDirectory['preset']) => presets.find((each) => each.value === preset)!.label;
/** How long the current token keeps working beside a new one (the backend's default: a day), and what that means. */
const keptFor = (span: string, seconds: number) => ({
  seconds,
  label: `works ${span} more`,
  meaning: `The current one keeps working for ${span} beside it: time to paste the new one into the identity provider.`,
});
const overlaps = [
  { seconds: 0, label: 'stops at once', meaning: 'The current one stops working at once: provisioning fails until the new one is in the identity provider.' },
  keptFor('an hour', 60 * 60),
  keptFor('a day', 24 * 60 * 60),
  keptFor('7 days', 7 * 24 * 60 * 60),
];
const membershipTones: Record<ScimDirectoryUser['membership'], string> = { member: 'good', suspended: 'bad', invited: 'warning' };
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const when = (value: string | null, otherwise: string) => (value ? dateFormat.format(new Date(value)) : otherwise);

/** A token in the one answer that holds it: the directory's first, or a rotation's. */
interface ShownToken {
  name: string;
  baseUrl: string;
  token: string;
  /** A rotation's: when the token it replaces stops working (null: at once). */
  previousExpiresAt?: string | null;
}

/**
 * The organization's SCIM directories (owners and admins): connect an identity provider (Okta,
 * Entra ID, Google Workspace, any SCIM 2.0 client), its base URL and token shown once to paste
 * there, with the setup steps of that provider; rotate and revoke tokens, turn it off; the users
 * it provisioned with their membership; its groups, mapped to the organization's roles.
 * docs/scim.md says what each step does.
 */
export function DirectorySettings() {
  const { active, loaded } = useOrganizations();
  const manages = managesOrganization(active?.role);
  const [shown, setShown] = useState<ShownToken>();
  const readDirectories = useMemo(() => (active && manages ? () => api.scimDirectories.list() : undefined), [active, manages]);
  const { data: directories, error: loadError, reload: load } = useLoad(readDirectories);

  const connect = useAction(async (form: HTMLFormElement) => {
    const fields = new FormData(form);
    const made = await api.scimDirectories.create({
      name: String(fields.get('name')).trim(),
      preset: String(fields.get('preset')) as ScimDirectory['preset'],
      defaultRole: String(fields.get('defaultRole')) as ScimDirectory['defaultRole'],
    });
    setShown({ name: made.name, baseUrl: made.baseUrl, token: made.token });
    form.reset();
    await load();
  });

  if (!active) return <NoOrganization loaded={loaded} />;
  if (!manages) return <Refusal what="the directory" organization={active.name} role={active.role} />;
  return (
    <section className="grid gap-6">
      <div className="card">
        <h1>Directory</h1>
        <p className="muted mb-4">
          Your identity provider keeps {active.name}&apos;s members in step with your company through SCIM: a person assigned to the app there becomes a
          member here, and a person turned off there loses access here within seconds.
        </p>
        {shown ? (
          <ShownOnce
            region="The directory's token"
            message={
              <>
                <p className="success" role="status">
                  {shown.previousExpiresAt === undefined
                    ? `${shown.name} is connected.`
                    : `${shown.name} has a new token; the one it replaces ${shown.previousExpiresAt ? `works until ${when(shown.previousExpiresAt, '')}` : 'no longer works'}.`}
                </p>
                <p className="error font-medium">Copy the token now and paste it into your identity provider: it is not shown again.</p>
              </>
            }
            values={[
              { label: 'The SCIM base URL', value: shown.baseUrl, copyLabel: 'Copy the base URL' },
              { label: 'The token', value: shown.token, copyLabel: 'Copy the token' },
            ]}
            onDone={() => setShown(undefined)}
          />
        ) : (
          <form
            className="stack"
            aria-label="Connect a directory"
            onSubmit={(event) => {
              event.preventDefault();
              void connect.run(event.currentTarget);
            }}
          >
            <h2>Connect a directory</h2>
            <div className="flex flex-wrap gap-3">
              <label className="min-w-0 grow">
                Name
                <input name="name" required maxLength={200} placeholder="e.g. Okta" />
              </label>
              <label>
                Identity provider
                <select name="preset" defaultValue="okta">
                  {presets.map((preset) => (
                    <option key={preset.value} value={preset.value}>
                      {preset.label}
                    </option>
                  ))}
                </select>
              </label>
              <label>
                Default role
                <select name="defaultRole" defaultValue="member">
                  <option>member</option>
                  <option>admin</option>
                </select>
              </label>
            </div>
            <p className="muted">The default role is what a provisioned person gets when no group mapping below gives them another.</p>
            <div>
              <button type="submit" disabled={connect.pending}>
                Connect directory
              </button>
            </div>
            <OutcomeMessage outcome={connect.outcome} pending={connect.pending} pendingText="Connecting…" />
          </form>
        )}
      </div>
      <LoadError error={loadError} />
      {directories?.length === 0 && <p className="muted">No directory yet. Connect your identity provider above.</p>}
      {directories?.map((directory) => (
        <DirectoryCard key={directory.id} directory={directory} isOwner={active.role === 'owner'} onChange={load} onToken={setShown} />
      ))}
    </section>
  );
}

/** One directory: its state and tokens, the setup steps of its provider, its users and groups. */
function DirectoryCard({ directory, isOwner, onChange, onToken }: { directory: ScimDirectory; isOwner: boolean; onChange(): Promise<void>; onToken(shown: ShownToken): void }) {
  const [overlap, setOverlap] = useState(24 * 60 * 60);
  const readUsers = useMemo(() => () => api.scimDirectories.users(directory.id), [directory.id]);
  const readGroups = useMemo(() => () => api.scimDirectories.groups(directory.id), [directory.id]);
  const readRequests = useMemo(() => () => api.scimDirectories.requests(directory.id), [directory.id]);
  const users = useLoad(readUsers);
  const groups = useLoad(readGroups);
  const requests = useLoad(readRequests);
  const change = useAction(async (work: () => Promise<string>) => {
    const message = await work();
    await onChange();
    return message;
  });
  const refresh = () => Promise.all([onChange(), users.reload(), groups.reload(), requests.reload()]);

  return (
    <article className="card grid gap-5" aria-label={directory.name}>
      <div className="grid gap-1">
        <h2 className="flex flex-wrap items-center gap-2">
          {directory.name} <span className={`badge ${directory.enabled ? 'good' : 'bad'}`}>{directory.enabled ? 'enabled' : 'disabled'}</span>
        </h2>
        <p className="muted">
          {presetLabel(directory.preset)} · default role {directory.defaultRole} · {directory.lastRequestAt ? `last request ${when(directory.lastRequestAt, '')}` : 'no request yet'}
        </p>
      </div>
      <div className="grid gap-1">
        <span className="text-sm text-gray-600">SCIM base URL</span>
        <div className="flex flex-wrap items-center gap-2">
          <code className="min-w-0 text-sm break-all" aria-label={`SCIM base URL of ${directory.name}`}>
            {directory.baseUrl}
          </code>
          <CopyButton text={directory.baseUrl} label="Copy the base URL" />
        </div>
      </div>

      <section className="grid gap-2" aria-label={`Tokens of ${directory.name}`}>
        <h3 className="font-semibold">Tokens</h3>
        <OutcomeMessage outcome={change.outcome} pending={change.pending} />
        {directory.tokens.length === 0 && <p className="muted">No token works now: rotate to make one.</p>}
        <ul className="grid gap-2">
          {directory.tokens.map((token) => (
            <li key={token.id} className="flex flex-wrap items-center gap-x-3 gap-y-1 text-sm">
              <code className="font-mono">{token.start}…</code>
              <span>{token.expiresAt ? `stops working ${when(token.expiresAt, '')}` : 'current'}</span>
              <span className="muted">last used {when(token.lastUsedAt, 'never')}</span>
              <ConfirmButton
                label="Revoke"
                accessibleName={`Revoke token ${token.start}`}
                title={`Revoke the token ${token.start}…?`}
                description={<p>The identity provider&apos;s next request with it is refused. Rotate first if it should keep provisioning.</p>}
                confirmLabel="Revoke"
                onConfirm={() =>
                  change.run(async () => {
                    await api.scimDirectories.revokeToken(directory.id, token.id);
                    return `The token ${token.start}… is revoked.`;
                  })
                }
              />
            </li>
          ))}
        </ul>
        <div className="flex flex-wrap items-end gap-2">
          <label className="min-w-0">
            When rotating, the current token
            <select className="max-w-full" value={overlap} onChange={(event) => setOverlap(Number(event.target.value))}>
              {overlaps.map((option) => (
                <option key={option.seconds} value={option.seconds}>
                  {option.label}
                </option>
              ))}
            </select>
          </label>
          <ConfirmButton
            label="Rotate token"
            accessibleName={`Rotate token of ${directory.name}`}
            className="quiet"
            title="Rotate the token?"
            description={<p>A new token is shown once. {overlaps.find((option) => option.seconds === overlap)!.meaning}</p>}
            confirmLabel="Rotate"
            onConfirm={() =>
              change.run(async () => {
                const rotated = await api.scimDirectories.rotateToken(directory.id, { overlapSeconds: overlap });
                onToken({ name: directory.name, baseUrl: directory.baseUrl, token: rotated.token, previousExpiresAt: rotated.previousExpiresAt });
                window.scrollTo({ top: 0 });
                return 'The token is rotated: copy the new one at the top of the page.';
              })
            }
          />
          <button
            type="button"
            className="quiet"
            aria-label={`${directory.enabled ? 'Disable' : 'Enable'} ${directory.name}`}
            disabled={change.pending}
            onClick={() =>
              void change.run(async () => {
                await api.scimDirectories.update(directory.id, { enabled: !directory.enabled });
                return directory.enabled ? `${directory.name} is disabled: its tokens are refused.` : `${directory.name} is enabled again.`;
              })
            }
          >
            {directory.enabled ? 'Disable' : 'Enable'}
          </button>
          <ConfirmButton
            label="Disconnect"
            accessibleName={`Disconnect ${directory.name}`}
            title={`Disconnect ${directory.name}?`}
            description={<p>Its tokens, users and groups go. The members it made stay members, with their roles; the ones it suspended can then be removed by hand.</p>}
            confirmLabel="Disconnect"
            onConfirm={() =>
              change.run(async () => {
                await api.scimDirectories.delete(directory.id);
                return `${directory.name} is disconnected.`;
              })
            }
          />
        </div>
      </section>

      <SetupSteps directory={directory} />

      <div className="flex flex-wrap items-center gap-2">
        <button type="button" className="quiet" onClick={() => void refresh()}>
          Refresh users, groups and requests
        </button>
      </div>
      <section className="grid gap-2" aria-label={`Users of ${directory.name}`}>
        <h3 className="font-semibold">Users</h3>
        <LoadError error={users.error} />
        {users.data?.length === 0 && <p className="muted">No user yet: assign people to the app in the identity provider.</p>}
        {users.data && users.data.length > 0 && (
          <>
            <div className="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Person</th>
                    <th scope="col">User name</th>
                    <th scope="col">Membership</th>
                  </tr>
                </thead>
                <tbody>
                  {users.data.map((user) => (
                    <tr key={user.id}>
                      <td>
                        <div className="font-medium">{user.displayName ?? user.email}</div>
                        <div className="muted wrap-anywhere">{user.email}</div>
                      </td>
                      <td className="wrap-anywhere">{user.userName}</td>
                      <td>
                        <span className={`badge ${membershipTones[user.membership]}`}>{user.membership}</span>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <p className="muted">
              Suspended: turned off in the identity provider, unable to sign in until turned on again. Invited: an account of its own outside the verified
              domains, which joins only by accepting.
            </p>
          </>
        )}
      </section>
      <RoleMappings directory={directory} groups={groups.data} loadError={groups.error} isOwner={isOwner} onSaved={groups.reload} />
      <RecentRequests directory={directory} requests={requests.data} loadError={requests.error} />
    </article>
  );
}

/**
 * What the identity provider asked lately, and what it was told: where an admin reads why Okta says
 * "deactivation failed". The newest 20 of what the backend keeps (its last 200 are one request away).
 */
function RecentRequests({ directory, requests, loadError }: { directory: ScimDirectory; requests?: ScimRequest[]; loadError?: string }) {
  const shown = requests?.slice(0, 20);
  return (
    <section className="grid gap-2" aria-label={`Recent requests of ${directory.name}`}>
      <h3 className="font-semibold">Recent requests</h3>
      <LoadError error={loadError} />
      {shown?.length === 0 && <p className="muted">No request yet, or none in the last seven days.</p>}
      {shown && shown.length > 0 && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Request</th>
                <th scope="col">Answer</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((request) => (
                <tr key={request.id}>
                  <td>{when(request.createdAt, '')}</td>
                  <td className="wrap-anywhere">
                    <code>
                      {request.method} {request.path.replace(/^\/scim\/v2\/[^/]+/, '')}
                    </code>
                  </td>
                  <td>
                    <span className={`badge ${request.status < 400 ? 'good' : 'bad'}`}>{request.status}</span>
                    {request.scimType && <span className="muted"> {request.scimType}</span>}
                    {request.detail && <div className="muted wrap-anywhere">{request.detail}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/**
 * The directory's groups with their member counts, each mapped to a role or to none. Saved whole,
 * as the backend replaces them: the provisioned members' roles follow at once.
 */
function RoleMappings({ directory, groups, loadError, isOwner, onSaved }: { directory: ScimDirectory; groups?: ScimDirectoryGroup[]; loadError?: string; isOwner: boolean; onSaved(): Promise<void> }) {
  // What the person changed and has not saved yet; the rest is as the backend has it.
  const [changed, setChanged] = useState<Record<string, Role | ''>>({});
  const roleOf = (group: ScimDirectoryGroup) => changed[group.id] ?? group.role ?? '';
  // Only an owner gives the owner role, or changes a mapping that gives it (the backend refuses an admin's save whole).
  const ownerMappedByOthers = !isOwner && (groups ?? []).some((group) => group.role === 'owner');
  const save = useAction(async () => {
    const mappings = (groups ?? []).flatMap((group) => {
      const role = roleOf(group);
      return role ? [{ groupId: group.id, role }] : [];
    });
    try {
      await api.scimDirectories.setRoleMappings(directory.id, mappings);
    } catch (thrown) {
      if (thrown instanceof AuthstrapError && thrown.code === 'LAST_OWNER') throw new Error(`Not saved. ${thrown.message}.`);
      throw thrown;
    }
    setChanged({});
    await onSaved();
    return mappings.length ? 'The role mappings are saved: the members of those groups have their roles now.' : 'No group is mapped any more: roles are set by hand again.';
  });

  return (
    <section className="grid gap-2" aria-label={`Groups of ${directory.name}`}>
      <h3 className="font-semibold">Groups and roles</h3>
      <p className="muted">
        A provisioned member gets the most privileged role of the mapped groups they are in (owner, then admin, then member), else the default role (
        {directory.defaultRole}). While no group is mapped, the directory leaves roles as they are.
      </p>
      <LoadError error={loadError} />
      {groups?.length === 0 && <p className="muted">No group yet: push groups from the identity provider (Okta: Push Groups; Entra ID: assign groups to the app).</p>}
      {groups && groups.length > 0 && (
        <form
          className="stack"
          aria-label={`Role mappings of ${directory.name}`}
          onSubmit={(event) => {
            event.preventDefault();
            void save.run();
          }}
        >
          {ownerMappedByOthers && <p className="muted">A group gives the owner role: only an owner can change these mappings.</p>}
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Group</th>
                  <th scope="col">Members</th>
                  <th scope="col">Role it gives</th>
                </tr>
              </thead>
              <tbody>
                {groups.map((group) => (
                  <tr key={group.id}>
                    <td className="wrap-anywhere">{group.displayName}</td>
                    <td>{group.members}</td>
                    <td>
                      <select
                        aria-label={`Role of ${group.displayName}`}
                        value={roleOf(group)}
                        disabled={ownerMappedByOthers || save.pending}
                        onChange={(event) => setChanged({ ...changed, [group.id]: event.target.value as Role | '' })}
                      >
                        <option value="">none</option>
                        <option value="member">member</option>
                        <option value="admin">admin</option>
                        {(isOwner || group.role === 'owner') && <option value="owner">owner</option>}
                      </select>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div>
            <button type="submit" disabled={ownerMappedByOthers || save.pending}>
              Save role mappings
            </button>
          </div>
          <OutcomeMessage outcome={save.outcome} pending={save.pending} pendingText="Saving…" />
        </form>
      )}
    </section>
  );
}

/** The steps in the identity provider, field by field (docs/scim.md), for the directory's preset. */
function SetupSteps({ directory }: { directory: ScimDirectory }) {
  const fields = (rows: [string, ReactNode][]) => (
    <div className="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([field, value]) => (
            <tr key={field}>
              <td>{field}</td>
              <td className="wrap-anywhere">{value}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
  const baseUrl = <code className="break-all">{directory.baseUrl}</code>;
  const token = 'the token, shown when the directory was connected or its token rotated';
  const steps: Record<ScimDirectory['preset'], ReactNode> = {
    okta: (
      <ol className="grid list-decimal gap-2 pl-5 text-sm">
        <li>In Okta: Applications, your app, General, App Settings: enable SCIM provisioning.</li>
        <li>
          Provisioning, Integration:
          {fields([
            ['SCIM connector base URL', baseUrl],
            ['Unique identifier field for users', <code key="userName">userName</code>],
            ['Supported provisioning actions', 'Push New Users, Push Profile Updates, Push Groups'],
            ['Authentication Mode', `HTTP Header; Authorization: Bearer, ${token}`],
          ])}
        </li>
        <li>Test Connector Configuration, then Save.</li>
        <li>Provisioning, To App: enable Create Users, Update User Attributes and Deactivate Users.</li>
        <li>Assign people to the app; push the groups whose members should get a role, and map them below.</li>
      </ol>
    ),
    entra: (
      <ol className="grid list-decimal gap-2 pl-5 text-sm">
        <li>In the Microsoft Entra admin center: Enterprise applications, your app, Provisioning, Get started; Provisioning Mode: Automatic.</li>
        <li>
          Admin Credentials:
          {fields([
            ['Tenant URL', baseUrl],
            ['Secret Token', token],
          ])}
        </li>
        <li>Test Connection (it looks for a user that does not exist, and expects none), then Save.</li>
        <li>
          Mappings: the defaults work as they are (userPrincipalName to userName, mail to the work e-mail, displayName, objectId to externalId, and
          active from whether the person is still assigned).
        </li>
        <li>Users and groups: assign people and groups to the app, then Start provisioning. Unassigning someone suspends their membership here.</li>
      </ol>
    ),
    google: (
      <p className="text-sm">
        Google Workspace provisions through its pre-integrated apps: where Google offers auto-provisioning for this app, give it the SCIM base URL above
        and {token} as the bearer token.
      </p>
    ),
    generic: (
      <p className="text-sm">
        Any SCIM 2.0 client: the SCIM base URL above, and {token} sent as <code>Authorization: Bearer</code>. Users and Groups are supported, with the
        content type <code>application/scim+json</code>.
      </p>
    ),
  };
  return (
    <details className="rounded-md border border-gray-200 bg-white px-3 py-2">
      <summary className="cursor-pointer text-sm font-medium text-gray-900">Set up {presetLabel(directory.preset)}</summary>
      <div className="mt-3 grid gap-2">{steps[directory.preset]}</div>
    </details>
  );
}
