'use client';

import Link from 'next/link';
import { useMemo, useState } from 'react';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { CopyButton } from '@/components/ui/copy-button';
import { LoadError, useLoad } from '@/components/ui/load';
import type { SsoAttributeMapping, SsoConnection, SsoConnectionInput, SsoPolicy } from '@/lib/authstrap-client';
import { api } from '@/lib/api';
import { NoOrganization, Refusal } from './refusal';
import { BeforeAdding, defaultAttributes, identityProviders, presetLabel, providerName, SetupSteps } from './sso-setup-steps';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const when = (value: string | null | undefined) => (value ? dateFormat.format(new Date(value)) : '');
const dayMs = 24 * 60 * 60 * 1000;

/** A connection's state in a word, its badge's look, and what it means. */
function stateOf(connection: SsoConnection): { word: string; tone: string; meaning: string } {
  if (connection.enabled) return { word: 'enabled', tone: 'good', meaning: 'People sign in with it.' };
  if (connection.tested) return { word: 'tested', tone: 'warning', meaning: 'It passed a test since its last change: enable it to let people sign in.' };
  return { word: 'draft', tone: '', meaning: 'Test it before it can be enabled: a test signs you in at the provider and shows what it sent, without signing anyone in here.' };
}

const mappingFields: { key: keyof SsoAttributeMapping; label: string }[] = [
  { key: 'email', label: 'E-mail address' },
  { key: 'name', label: 'Display name' },
  { key: 'givenName', label: 'Given name' },
  { key: 'familyName', label: 'Family name' },
  { key: 'groups', label: 'Groups' },
  { key: 'subject', label: 'Subject (the stable identifier)' },
];

/**
 * The organization's single sign-on (owners and admins): its connections (OIDC and SAML) with the
 * values the identity provider's admin copies, a test sign-in, enable and disable, refreshing the
 * provider's metadata, deleting; adding one, with the setup steps of the chosen provider; and the
 * policy that makes single sign-on the only way in for the verified domains' addresses (owners
 * only). `testedConnectionId`: the page the backend sends the browser back to after a test.
 * Everything through the backend's API (docs/sso.md).
 */
export function SsoSettings({ testedConnectionId }: { testedConnectionId?: string }) {
  const { active, loaded } = useOrganizations();
  const manages = managesOrganization(active?.role);
  const isOwner = active?.role === 'owner';
  // Read again when the organization changes (the client sends the active one).
  const readAll = useMemo(
    () => (active && manages ? () => Promise.all([api.ssoConnections.list(), api.ssoPolicy.get(), api.domains.list()]) : undefined),
    [active, manages],
  );
  const { data, error: loadError, reload: load } = useLoad(readAll);
  const [connections, policy, domains] = data ?? [];
  const verifiedDomains = (domains ?? []).filter((domain) => domain.state === 'verified' || domain.state === 'failing').map((domain) => domain.domain);
  const tested = connections?.find((connection) => connection.id === testedConnectionId);

  // One message under the connections' heading: the latest action's.
  const act = useAction(async (work: () => Promise<string | void>) => {
    const message = await work();
    await load();
    return message;
  });

  if (!active) return <NoOrganization loaded={loaded} />;
  if (!manages) return <Refusal what="single sign-on" organization={active.name} role={active.role} />;
  return (
    <section className="grid gap-6">
      <div className="card">
        <h1>Single sign-on</h1>
        <p className="muted">
          Let the people of {active.name} sign in with your company&apos;s identity provider (Okta, Microsoft Entra ID, Google Workspace, or any OpenID
          Connect or SAML 2.0 provider). A connection starts as a draft: test it, then enable it. Requiring it for your{' '}
          <Link href="/settings/domains">verified domains</Link> makes it the only way in for their addresses.
        </p>
      </div>
      {tested?.lastTest && <TestOutcome connection={tested} />}
      <div className="grid gap-3">
        <h2>Connections</h2>
        <OutcomeMessage outcome={act.outcome} pending={act.pending} />
        <LoadError error={loadError} />
        {connections?.length === 0 && <p className="muted">No connection yet. Add one below.</p>}
        {connections?.map((connection) => (
          <ConnectionCard key={connection.id} connection={connection} enforced={Boolean(policy?.ssoRequired && connection.enabled)} act={act} />
        ))}
      </div>
      <AddConnection onAdded={load} />
      {policy && <PolicyCard policy={policy} isOwner={isOwner} verifiedDomains={verifiedDomains} hasEnabled={Boolean(connections?.some((connection) => connection.enabled))} onSaved={load} />}
    </section>
  );
}

/** What the test sign-in the browser just came back from found (the backend kept it in `lastTest`). */
function TestOutcome({ connection }: { connection: SsoConnection }) {
  const test = connection.lastTest!;
  const profile = test.profile ?? {};
  return test.ok ? (
    <div className="card" role="status" aria-label="Test result">
      <p className="success">
        The test of {connection.name} passed ({when(test.at)}): the provider signed in {String(profile.email ?? '')}
        {profile.name ? ` (${String(profile.name)})` : ''}. Nobody was signed in here. You can enable it now.
      </p>
    </div>
  ) : (
    <div className="card" role="alert" aria-label="Test result">
      <p className="error">
        The test of {connection.name} failed ({when(test.at)}): {test.error ?? 'the provider answered nothing usable'}.
      </p>
    </div>
  );
}

type Act = { run(work: () => Promise<string | void>): Promise<boolean>; pending: boolean };

/** One connection: its state, the values to copy into the IdP, what it knows of the IdP, its last test, and its buttons. */
function ConnectionCard({ connection, enforced, act }: { connection: SsoConnection; enforced: boolean; act: Act }) {
  const state = stateOf(connection);
  const sp = connection.serviceProvider;
  const name = connection.name;
  const canRefresh = connection.protocol === 'oidc' || connection.samlIdpMetadataUrl !== null;
  return (
    <article className="card grid gap-3" aria-label={name}>
      <div className="grid gap-1">
        <h3 className="flex flex-wrap items-center gap-2 font-semibold break-all">
          {name}
          <span className="badge">{connection.protocol === 'oidc' ? 'OpenID Connect' : 'SAML'}</span>
          <span className={`badge ${state.tone}`}>{state.word}</span>
          {enforced && <span className="badge good">required</span>}
        </h3>
        <p className="text-sm">
          {providerName(connection)} · new members join as {connection.defaultRole}. {state.meaning}
        </p>
      </div>
      <dl className="grid gap-2 text-sm" aria-label={`What ${name}'s identity provider needs`}>
        {sp.redirectUri && <CopyField label="Redirect URI" value={sp.redirectUri} />}
        {sp.entityId && <CopyField label="SP entity ID" value={sp.entityId} />}
        {sp.acsUrl && <CopyField label="ACS URL" value={sp.acsUrl} />}
        {sp.metadataUrl && <CopyField label="SP metadata URL" value={sp.metadataUrl} />}
        <CopyField label="Sign-in link" value={sp.loginUrl} />
      </dl>
      {sp.metadataUrl && (
        <p className="text-sm">
          <a href={sp.metadataUrl} download={`sp-metadata-${connection.id}.xml`}>
            Download the SP metadata XML
          </a>
        </p>
      )}
      <SetupSteps connection={connection} />
      <IdentityProviderFacts connection={connection} />
      {connection.lastTest && (
        <p className={connection.lastTest.ok ? 'success' : 'error'}>
          Last test {when(connection.lastTest.at)}: {connection.lastTest.ok ? `passed, as ${String(connection.lastTest.profile?.email ?? '')}` : `failed: ${connection.lastTest.error ?? ''}`}
        </p>
      )}
      <div className="flex flex-wrap gap-2">
        <button
          type="button"
          className="quiet"
          aria-label={`Test sign-in: ${name}`}
          disabled={act.pending}
          onClick={() =>
            void act.run(async () => {
              // The backend binds the test to this browser (a cookie), so it continues in this tab and comes back here.
              const { url } = await api.ssoConnections.test(connection.id);
              window.location.assign(url);
              return `Opening ${presetLabel(connection.preset)} to test ${name}…`;
            })
          }
        >
          Test sign-in
        </button>
        {connection.enabled ? (
          <button type="button" className="quiet" aria-label={`Disable ${name}`} disabled={act.pending} onClick={() => void act.run(async () => {
 await api.ssoConnections.disable(connection.id);
 return `${name} is disabled; the sessions it made have ended.`;
 })}>
            Disable
          </button>
        ) : (
          <button type="button" aria-label={`Enable ${name}`} disabled={act.pending || !connection.tested} onClick={() => void act.run(async () => {
 await api.ssoConnections.enable(connection.id);
 return `${name} is enabled.`;
 })}>
            Enable
          </button>
        )}
        {canRefresh && (
          <button
            type="button"
            className="quiet"
            aria-label={`Refresh metadata: ${name}`}
            disabled={act.pending}
            onClick={() => void act.run(async () => {
 await api.ssoConnections.refresh(connection.id);
 return `${name}'s ${connection.protocol === 'oidc' ? 'discovery document' : 'metadata'} was read again.`;
 })}
          >
            Refresh metadata
          </button>
        )}
        <ConfirmButton
          label="Delete"
          accessibleName={`Delete ${name}`}
          title={`Delete ${name}?`}
          description={<p>The connection goes, and the sessions it made end at once. Its people keep their accounts and memberships.</p>}
          confirmLabel="Delete"
          onConfirm={() => act.run(async () => {
 await api.ssoConnections.delete(connection.id);
 return `${name} is deleted.`;
 })}
        />
      </div>
    </article>
  );
}

/** What the connection knows of the identity provider: OIDC's issuer and client, SAML's entity, SSO URL and signing certificates. */
function IdentityProviderFacts({ connection }: { connection: SsoConnection }) {
  const rows: [string, string][] =
    connection.protocol === 'oidc'
      ? [
          ['Issuer', connection.oidcIssuer ?? ''],
          ['Client id', connection.oidcClientId ?? ''],
          ['Client secret', connection.clientSecretSet ? 'set (never shown again)' : 'not set'],
          ...(connection.oidcTenant ? ([['Tenant', connection.oidcTenant]] as [string, string][]) : []),
        ]
      : [
          ['IdP entity ID', connection.samlIdpEntityId ?? ''],
          ['IdP sign-in URL', connection.samlIdpSsoUrl ?? ''],
          ['Metadata', connection.samlIdpMetadataUrl ?? (connection.certificates?.some((certificate) => certificate.source === 'metadata') ? 'uploaded as XML' : 'typed in')],
        ];
  rows.push(['Last read from the IdP', connection.metadataRefreshedAt ? when(connection.metadataRefreshedAt) : 'when it was added']);
  return (
    <div className="grid gap-2 text-sm">
      {connection.metadataRefreshError && (
        <p className="error" role="note">
          The last daily read of the IdP failed: {connection.metadataRefreshError}. Sign-in goes on with what was read before.
        </p>
      )}
      <dl className="grid gap-1" aria-label={`${connection.name}'s identity provider`}>
        {rows.map(([label, value]) => (
          <div key={label} className="grid gap-x-2 sm:grid-cols-[10rem_1fr]">
            <dt className="text-gray-600">{label}</dt>
            <dd className="min-w-0 break-all">{value}</dd>
          </div>
        ))}
      </dl>
      {connection.certificates && connection.certificates.length > 0 && (
        <ul className="grid gap-1" aria-label={`${connection.name}'s signing certificates`}>
          {connection.certificates.map((certificate) => {
            const daysLeft = Math.floor((Date.parse(certificate.notAfter) - Date.now()) / dayMs);
            return (
              <li key={certificate.id} className="flex flex-wrap items-center gap-2">
                <span>
                  Certificate <code className="break-all">{certificate.fingerprintSha256.slice(0, 23)}…</code> valid until {when(certificate.notAfter)}
                </span>
                {certificate.expiresSoon && (
                  <span className="badge bad whitespace-normal" role="note">
                    {daysLeft < 0 ? 'expired' : `expires in ${daysLeft} day${daysLeft === 1 ? '' : 's'}`}: give the connection the IdP&apos;s next certificate
                  </span>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

/** A value the IdP's admin pastes: whole (it wraps, never cut), with a copy button. */
function CopyField({ label, value }: { label: string; value: string }) {
  return (
    <div className="grid gap-1">
      <dt className="text-gray-600">{label}</dt>
      <dd className="flex flex-wrap items-center gap-2">
        <code className="min-w-0 font-mono break-all" aria-label={label}>
          {value}
        </code>
        <CopyButton text={value} label={`Copy the ${label}`} />
      </dd>
    </div>
  );
}

/** The add form: the provider (its setup steps follow the choice), its settings, the default role, the attribute mapping. */
function AddConnection({ onAdded }: { onAdded(): Promise<void> }) {
  const [choice, setChoice] = useState(identityProviders[0]!.value);
  const [samlSource, setSamlSource] = useState<'metadataXml' | 'metadataUrl'>('metadataXml');
  const [metadataXml, setMetadataXml] = useState('');
  const provider = identityProviders.find((candidate) => candidate.value === choice)!;

  const add = useAction(async (form: HTMLFormElement) => {
    const fields = new FormData(form);
    const text = (name: string) => String(fields.get(name) ?? '').trim();
    const attributeMapping = Object.fromEntries(mappingFields.map(({ key }) => [key, text(`mapping.${key}`)]).filter(([, value]) => value !== ''));
    const common = {
      name: text('name') || presetLabel(provider.preset),
      preset: provider.preset,
      defaultRole: text('defaultRole') as 'member' | 'admin',
      ...(Object.keys(attributeMapping).length > 0 ? { attributeMapping } : {}),
    };
    const input: SsoConnectionInput =
      provider.protocol === 'oidc'
        ? { ...common, protocol: 'oidc', oidc: { issuer: text('issuer'), clientId: text('clientId'), clientSecret: text('clientSecret'), ...(text('tenant') ? { tenant: text('tenant') } : {}) } }
        : { ...common, protocol: 'saml', saml: samlSource === 'metadataUrl' ? { metadataUrl: text('metadataUrl') } : { metadataXml: metadataXml.trim() } };
    const made = await api.ssoConnections.create(input);
    form.reset();
    setMetadataXml('');
    await onAdded();
    return `${made.name} is added as a draft. Copy its values into ${presetLabel(made.preset)}, then test it.`;
  });

  return (
    <div className="card grid gap-4">
      <h2>Add a connection</h2>
      <label>
        Identity provider
        <select className="w-full min-w-0" value={choice} onChange={(event) => setChoice(event.target.value)}>
          {identityProviders.map((candidate) => (
            <option key={candidate.value} value={candidate.value}>
              {candidate.label}
            </option>
          ))}
        </select>
      </label>
      <div className="grid gap-1" role="region" aria-label="Setup steps">
        <h3 className="text-sm font-semibold">Setup steps</h3>
        <BeforeAdding preset={provider.preset} protocol={provider.protocol} />
      </div>
      <form
        className="stack"
        aria-label="Add a connection"
        onSubmit={(event) => {
          event.preventDefault();
          void add.run(event.currentTarget);
        }}
      >
        <label>
          Name
          <input name="name" maxLength={200} placeholder={presetLabel(provider.preset)} autoComplete="off" />
        </label>
        {provider.protocol === 'oidc' ? (
          <>
            <label>
              Issuer URL
              <input name="issuer" type="url" required maxLength={2048} autoComplete="off" />
            </label>
            <label>
              Client id
              <input name="clientId" required maxLength={500} autoComplete="off" />
            </label>
            <label>
              Client secret
              {/* Sealed at rest by the backend and never answered: what is typed here is not shown again. */}
              <input name="clientSecret" type="password" required maxLength={2000} autoComplete="off" />
            </label>
            {(provider.preset === 'entra' || provider.preset === 'google') && (
              <label>
                {provider.preset === 'entra' ? 'Tenant id (every ID token’s tid)' : 'Workspace domain (every ID token’s hd)'}
                <input name="tenant" required maxLength={200} autoComplete="off" />
              </label>
            )}
          </>
        ) : (
          <fieldset className="grid gap-2">
            <legend className="text-sm text-gray-600">The IdP&apos;s metadata</legend>
            <div className="flex flex-wrap gap-4 text-sm">
              <label className="flex items-center gap-2">
                <input type="radio" name="samlSource" checked={samlSource === 'metadataXml'} onChange={() => setSamlSource('metadataXml')} />
                Upload or paste the XML
              </label>
              <label className="flex items-center gap-2">
                <input type="radio" name="samlSource" checked={samlSource === 'metadataUrl'} onChange={() => setSamlSource('metadataUrl')} />
                Its URL
              </label>
            </div>
            {samlSource === 'metadataUrl' ? (
              <label>
                Metadata URL
                <input name="metadataUrl" type="url" required maxLength={2048} autoComplete="off" />
              </label>
            ) : (
              <>
                <label>
                  Metadata file
                  <input
                    type="file"
                    accept=".xml,application/xml,text/xml"
                    onChange={async (event) => {
                      const file = event.target.files?.[0];
                      if (file) setMetadataXml(await file.text());
                    }}
                  />
                </label>
                <label>
                  Metadata XML
                  <textarea rows={4} required maxLength={100_000} value={metadataXml} onChange={(event) => setMetadataXml(event.target.value)} className="font-mono text-xs" />
                </label>
              </>
            )}
          </fieldset>
        )}
        <label>
          Role of new members
          <select className="w-full min-w-0" name="defaultRole" defaultValue="member">
            <option value="member">member</option>
            <option value="admin">admin</option>
          </select>
        </label>
        <details className="rounded-md border border-gray-200 bg-white px-3 py-2">
          <summary className="cursor-pointer text-sm font-medium text-gray-900">Attribute mapping</summary>
          <p className="muted mt-2">Leave a field empty for the default. Change it only when {presetLabel(provider.preset)} sends the value under another name.</p>
          <div className="mt-2 grid gap-2">
            {mappingFields.map(({ key, label }) => (
              <label key={key}>
                {label} (default: {defaultAttributes[provider.protocol][key]})
                <input name={`mapping.${key}`} maxLength={200} autoComplete="off" />
              </label>
            ))}
          </div>
        </details>
        <div>
          <button type="submit" disabled={add.pending}>
            Add connection
          </button>
        </div>
        <OutcomeMessage outcome={add.outcome} pending={add.pending} pendingText="Reading the provider's settings…" />
      </form>
    </div>
  );
}

/** The policy: require single sign-on for the verified domains (owners only), with the break-glass path explained. */
function PolicyCard({ policy, isOwner, verifiedDomains, hasEnabled, onSaved }: { policy: SsoPolicy; isOwner: boolean; verifiedDomains: string[]; hasEnabled: boolean; onSaved(): Promise<void> }) {
  const save = useAction(async (form: HTMLFormElement) => {
    const fields = new FormData(form);
    const ssoRequired = fields.get('ssoRequired') === 'on';
    const saved = await api.ssoPolicy.set({ ssoRequired, breakGlass: fields.get('breakGlass') === 'none' ? 'none' : 'owners' });
    await onSaved();
    if (!ssoRequired) return 'Single sign-on is no longer required.';
    const ended = saved.sessionsEnded ?? 0;
    return `Single sign-on is required. ${ended} session${ended === 1 ? '' : 's'} made otherwise ended.`;
  });
  const domains = verifiedDomains.length > 0 ? verifiedDomains.join(', ') : 'none yet';
  return (
    <div className="card grid gap-3">
      <h2>Require single sign-on</h2>
      <p className="text-sm">
        {policy.ssoRequired ? `Required since ${when(policy.requiredSince)}` : 'Not required'}. Verified domains: {domains}.
      </p>
      <p className="muted">
        When required, the addresses of the verified domains sign in only through an enabled connection: password sign-in, sign-up, password reset and
        invitations for them are refused and point to single sign-on, and their sessions made otherwise end. Break-glass: with &ldquo;owners keep a
        password&rdquo;, the owners can still sign in with their password when the identity provider is down or misconfigured; each such sign-in is
        recorded. With &ldquo;nobody&rdquo;, recovering from a broken provider needs the platform&apos;s operators.
      </p>
      {isOwner ? (
        <form
          className="stack"
          aria-label="Single sign-on policy"
          onSubmit={(event) => {
            event.preventDefault();
            void save.run(event.currentTarget);
          }}
        >
          <label className="flex items-center gap-2">
            <input type="checkbox" name="ssoRequired" defaultChecked={policy.ssoRequired} />
            Require single sign-on for the verified domains
          </label>
          <label>
            Break-glass
            <select className="w-full min-w-0" name="breakGlass" defaultValue={policy.breakGlass}>
              <option value="owners">Owners keep a password</option>
              <option value="none">Nobody</option>
            </select>
          </label>
          {!hasEnabled && <p className="muted">Requiring it needs an enabled connection and a verified domain.</p>}
          <div>
            <button type="submit" disabled={save.pending}>
              Save policy
            </button>
          </div>
          <OutcomeMessage outcome={save.outcome} pending={save.pending} pendingText="Saving…" />
        </form>
      ) : (
        <p className="muted">Only the owners of the organization change this.</p>
      )}
    </div>
  );
}
