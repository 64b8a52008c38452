'use client';

import { useCallback, useState } from 'react';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { LoadError, useLoad } from '@/components/ui/load';
import { EventSentence } from '@/components/ui/event-sentence';
import { Pager } from '@/components/ui/pager';
import { api } from '@/lib/api';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const eventsPerPage = 20;

/** Where the signed-in user is signed in (the backend's sessions of theirs, this one marked); sign one or all others out. */
export function Sessions() {
  const { data: sessions, error: loadError, reload } = useLoad(useCallback(() => api.auth.sessions(), []));
  const signOut = useAction(async (work: () => Promise<string>) => {
    const message = await work();
    await reload();
    return message;
  });

  return (
    <section className="card grid gap-3" aria-labelledby="sessions-heading">
      <h2 id="sessions-heading">Where you are signed in</h2>
      <OutcomeMessage outcome={signOut.outcome} pending={signOut.pending} pendingText="Signing out…" />
      <LoadError error={loadError} />
      {sessions && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Device</th>
                <th scope="col">IP address</th>
                <th scope="col">Signed in</th>
                <th scope="col">Last renewed</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {sessions.map((session) => (
                <tr key={session.id}>
                  <td>{session.userAgent ?? 'unknown'}</td>
                  <td>{session.ipAddress ?? 'unknown'}</td>
                  <td>{dateFormat.format(new Date(session.createdAt))}</td>
                  <td>{dateFormat.format(new Date(session.updatedAt))}</td>
                  <td>
                    {session.current ? (
                      'this one'
                    ) : (
                      <button
                        type="button"
                        className="quiet"
                        aria-label={`Sign out the session from ${session.ipAddress ?? 'an unknown address'}, signed in ${dateFormat.format(new Date(session.createdAt))}`}
                        disabled={signOut.pending}
                        onClick={() =>
                          void signOut.run(async () => {
                            await api.auth.revokeSession(session.id);
                            return 'That session is signed out.';
                          })
                        }
                      >
                        Sign out
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div>
        <button
          type="button"
          disabled={signOut.pending || !sessions || sessions.length < 2}
          onClick={() =>
            void signOut.run(async () => {
              const { revoked } = await api.auth.revokeOtherSessions();
              return `Signed out ${revoked} other ${revoked === 1 ? 'session' : 'sessions'}.`;
            })
          }
        >
          Sign out everywhere else
        </button>
      </div>
    </section>
  );
}

/** What happened to the account (sign-ins and failed ones, password and address changes, sessions ended), newest first, paged by the backend. */
export function SecurityEvents() {
  const [page, setPage] = useState(1);
  const { data: events, error: loadError } = useLoad(useCallback(() => api.auth.securityEvents({ page, limit: eventsPerPage }), [page]));

  return (
    <section className="card grid gap-3" aria-labelledby="security-events-heading">
      <h2 id="security-events-heading">Security events</h2>
      <p className="muted">If you see a sign-in or a change that was not you, change your password and sign out everywhere else.</p>
      <LoadError error={loadError} />
      {events?.data.length === 0 && <p className="muted">Nothing yet. Sign-ins, password changes and ended sessions show here.</p>}
      {events && events.data.length > 0 && (
        <>
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">What</th>
                  <th scope="col">When</th>
                  <th scope="col">IP address</th>
                  <th scope="col">Device</th>
                </tr>
              </thead>
              <tbody>
                {events.data.map((event) => (
                  <tr key={event.id}>
                    <td>
                      <EventSentence event={event} />
                    </td>
                    <td>{dateFormat.format(new Date(event.createdAt))}</td>
                    <td>{event.ipAddress ?? 'unknown'}</td>
                    <td>{event.userAgent ?? 'unknown'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager meta={events.meta} onPage={setPage} />
        </>
      )}
    </section>
  );
}
