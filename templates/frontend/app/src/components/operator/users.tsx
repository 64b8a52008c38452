'use client';

import Link from 'next/link';
import { CardTable } from '@/components/ui/card-table';
import { LoadError } from '@/components/ui/load';
import { Pager } from '@/components/ui/pager';
import { operatorApi } from '@/lib/api';
import { matchCount, SearchForm, useSearchedList } from './search-form';
import { dateFormat, dateTimeFormat } from './formats';

const usersPerPage = 25;

/** Every user of the platform, newest first, or those a search finds; each a link to their page. */
export function OperatorUsers() {
  const { data: users, error, search, onSearch, setPage } = useSearchedList(operatorApi.users, usersPerPage);

  return (
    <section className="grid min-w-0 gap-4">
      <div>
        <h1>Users</h1>
        <p className="muted">Everyone with an account, in every organization. Open one to see their organizations, sessions and sign-ins, and to act.</p>
      </div>
      <SearchForm
        label="Search users"
        placeholder="jane@acme.com, Jane, or an id"
        onSearch={onSearch}
      />
      <LoadError error={error} />
      {users && (
        <>
          <p className="muted" aria-live="polite">
            {matchCount(users.meta, search, ['user', 'users'])}
          </p>
          {users.data.length > 0 && (
            <CardTable label="Users" columns={['User', 'Organizations', 'Last seen', 'State', 'Signed up']}>
              {users.data.map((user) => (
                <tr key={user.id} className="align-top">
                  <td data-label="User" className="break-words">
                    <Link href={`/operator/users/${user.id}`}>{user.name || user.email}</Link>
                    <div className="muted">{user.email}</div>
                  </td>
                  <td data-label="Organizations">{user.organizations}</td>
                  <td data-label="Last seen">{user.lastSeenAt ? dateTimeFormat.format(new Date(user.lastSeenAt)) : 'No session'}</td>
                  <td data-label="State">
                    <UserState banned={user.banned} verified={user.email_verified} />
                  </td>
                  <td data-label="Signed up">{dateFormat.format(new Date(user.createdAt))}</td>
                </tr>
              ))}
            </CardTable>
          )}
          <Pager meta={users.meta} onPage={setPage} />
        </>
      )}
    </section>
  );
}

/** A user's state in words, as badges: banned, and whether their address is confirmed. */
export function UserState({ banned, verified }: { banned: boolean; verified: boolean }) {
  return (
    <span className="flex flex-wrap gap-1">
      {banned && <span className="badge bad">Banned</span>}
      {verified ? <span className="badge good">Address confirmed</span> : <span className="badge warning">Address not confirmed</span>}
    </span>
  );
}
