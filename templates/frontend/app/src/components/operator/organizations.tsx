'use client';

import Link from 'next/link';
import { CardTable } from '@/components/ui/card-table';
import { LoadError } from '@/components/ui/load';
import { Pager } from '@/components/ui/pager';
import { operatorApi } from '@/lib/api';
import { dateFormat } from './formats';
import { matchCount, SearchForm, useSearchedList } from './search-form';

const organizationsPerPage = 25;

/** Every organization, newest first, or those a search finds by name, slug, id or a member's address. */
export function OperatorOrganizations() {
  const { data: organizations, error, search, onSearch, setPage } = useSearchedList(operatorApi.organizations, organizationsPerPage);

  return (
    <section className="grid min-w-0 gap-4">
      <div>
        <h1>Organizations</h1>
        <p className="muted">Every organization on the platform. A search finds a name, a slug, an id, or the address of one of its members.</p>
      </div>
      <SearchForm
        label="Search organizations"
        placeholder="Acme, acme-inc, jane@acme.com, or an id"
        onSearch={onSearch}
      />
      <LoadError error={error} />
      {organizations && (
        <>
          <p className="muted" aria-live="polite">
            {matchCount(organizations.meta, search, ['organization', 'organizations'])}
          </p>
          {organizations.data.length > 0 && (
            <CardTable label="Organizations" columns={['Organization', 'Slug', 'Members', 'Created']}>
              {organizations.data.map((organization) => (
                <tr key={organization.id} className="align-top">
                  <td data-label="Organization" className="break-words">
                    <Link href={`/operator/organizations/${organization.id}`}>{organization.name}</Link>
                    <div className="muted font-mono text-xs">{organization.id}</div>
                  </td>
                  <td data-label="Slug" className="break-words">
                    {organization.slug}
                  </td>
                  <td data-label="Members">{organization.members}</td>
                  <td data-label="Created">{dateFormat.format(new Date(organization.createdAt))}</td>
                </tr>
              ))}
            </CardTable>
          )}
          <Pager meta={organizations.meta} onPage={setPage} />
        </>
      )}
    </section>
  );
}
