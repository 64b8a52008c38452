'use client';

import { useMemo } from 'react';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { CopyButton } from '@/components/ui/copy-button';
import { LoadError, useLoad } from '@/components/ui/load';
import type { Domain } from '@/lib/authstrap-client';
import { api } from '@/lib/api';
import { NoOrganization, Refusal } from './refusal';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const when = (value: string | null) => (value ? dateFormat.format(new Date(value)) : '');

/** Each state in words: its badge's look, and what it means for the organization. */
const states: Record<Domain['state'], { tone: string; meaning: (domain: Domain) => string }> = {
  pending: { tone: 'warning', meaning: () => 'Not proven yet: publish the TXT record below, then verify.' },
  verified: { tone: 'good', meaning: (domain) => `The organization's since ${when(domain.verifiedAt)}. Keep the record: it is checked again.` },
  failing: { tone: 'bad', meaning: (domain) => `The record is gone. The domain still counts until ${when(domain.lapsesAt)}; publish it again before then.` },
  lapsed: { tone: 'bad', meaning: () => 'The record stayed gone: the domain no longer counts. Publish it again and verify.' },
};

/**
 * The organization's domains (owners and admins): claim one, publish the TXT record the backend
 * gives at the DNS provider (name and value to copy), verify it now (the backend checks again on
 * its own schedule), and remove a claim. Only a verified domain does anything: docs/domains.md.
 */
export function DomainsSettings() {
  const { active, loaded } = useOrganizations();
  const manages = managesOrganization(active?.role);
  // Read again when the organization changes (the client sends the active one).
  const readDomains = useMemo(() => (active && manages ? () => api.domains.list() : undefined), [active, manages]);
  const { data: domains, error: loadError, reload: load } = useLoad(readDomains);

  const claim = useAction(async (form: HTMLFormElement) => {
    const claimed = await api.domains.claim(String(new FormData(form).get('domain')).trim());
    form.reset();
    await load();
    return `${claimed.domain} is claimed. Publish its TXT record at your DNS provider, then verify it.`;
  });
  // One message under the heading: the latest action's.
  const verify = useAction(async (domain: Domain) => {
    remove.clear();
    const checked = await api.domains.verify(domain.id);
    await load();
    // Not found is no HTTP error (DNS takes its time), but it is no success either: said as an alert.
    if (checked.state !== 'verified') {
      const state = checked.state === 'pending' ? 'not verified' : checked.state;
      throw new Error(`${checked.domain} is ${state}: ${checked.lastCheckError ?? 'record not found'}. DNS changes can take a while; try again later.`);
    }
    return `${checked.domain} is verified.`;
  });
  const remove = useAction(async (domain: Domain) => {
    verify.clear();
    await api.domains.remove(domain.id);
    await load();
    return `${domain.domain} is removed.`;
  });

  if (!active) return <NoOrganization loaded={loaded} />;
  if (!manages) return <Refusal what="domains" organization={active.name} role={active.role} />;
  return (
    <section className="grid gap-6">
      <div className="card">
        <h1>Domains</h1>
        <p className="muted mb-4">
          Prove that {active.name} owns a domain with a DNS TXT record. Only a verified domain counts: the organization can then require its addresses to
          sign in with single sign-on, and the accounts a directory provisions in it are the organization&apos;s.
        </p>
        <form
          className="stack"
          aria-label="Claim a domain"
          onSubmit={(event) => {
            event.preventDefault();
            void claim.run(event.currentTarget);
          }}
        >
          <label>
            Domain
            <input name="domain" required maxLength={300} placeholder="example.com" autoComplete="off" />
          </label>
          <div>
            <button type="submit" disabled={claim.pending}>
              Claim domain
            </button>
          </div>
          <OutcomeMessage outcome={claim.outcome} pending={claim.pending} pendingText="Claiming…" />
        </form>
      </div>
      <div className="grid gap-3">
        <h2>Claimed domains</h2>
        <OutcomeMessage outcome={verify.outcome} pending={verify.pending} pendingText="Checking the TXT record…" />
        <OutcomeMessage outcome={remove.outcome} pending={remove.pending} pendingText="Removing…" />
        <LoadError error={loadError} />
        {domains?.length === 0 && <p className="muted">No domains yet. Claim the domain of your company&apos;s e-mail addresses above.</p>}
        {domains?.map((domain) => (
          <article key={domain.id} className="card grid gap-3" aria-label={domain.domain}>
            <div className="grid gap-1">
              <h3 className="flex flex-wrap items-center gap-2 font-mono text-sm font-semibold break-all">
                {domain.domain} <span className={`badge ${states[domain.state].tone} font-sans`}>{domain.state}</span>
              </h3>
              <p className="text-sm">{states[domain.state].meaning(domain)}</p>
              {domain.lastCheckedAt && (
                <p className="muted">
                  Last checked {when(domain.lastCheckedAt)}
                  {domain.lastCheckError ? `: ${domain.lastCheckError}` : ''}.
                </p>
              )}
            </div>
            <dl className="grid gap-2 text-sm" aria-label={`The TXT record of ${domain.domain}`}>
              <div className="grid gap-1">
                <dt className="text-gray-600">Type</dt>
                <dd className="font-mono">{domain.txtRecord.type}</dd>
              </div>
              <RecordField label="Name" value={domain.txtRecord.name} domain={domain.domain} />
              <RecordField label="Value" value={domain.txtRecord.value} domain={domain.domain} />
            </dl>
            <div className="flex flex-wrap gap-2">
              <button
                type="button"
                className="quiet"
                aria-label={`Verify now: ${domain.domain}`}
                disabled={verify.pending}
                onClick={() => void verify.run(domain)}
              >
                Verify now
              </button>
              <ConfirmButton
                label="Remove"
                accessibleName={`Remove ${domain.domain}`}
                title={`Remove ${domain.domain}?`}
                description={<p>The claim goes, and with it whatever the domain does for the organization. Claiming it again needs a new TXT record.</p>}
                confirmLabel="Remove"
                onConfirm={() => remove.run(domain)}
              />
            </div>
          </article>
        ))}
      </div>
    </section>
  );
}

/** One field of the TXT record, whole (it wraps, never cut) and with a copy button: to paste at the DNS provider as it is. */
function RecordField({ label, value, domain }: { label: 'Name' | 'Value'; value: string; domain: string }) {
  return (
    <div className="grid gap-1">
      <dt className="text-gray-600">{label}</dt>
      <dd className="flex flex-wrap items-center gap-2">
        <code className="min-w-0 font-mono break-all" aria-label={`Record ${label.toLowerCase()} for ${domain}`}>
          {value}
        </code>
        <CopyButton text={value} label={`Copy the ${label.toLowerCase()}`} />
      </dd>
    </div>
  );
}
