'use client';

import Link from 'next/link';
import { useCallback, useState } from 'react';
import { LoadError, useLoad } from '@/components/ui/load';
import { Pager } from '@/components/ui/pager';
import { eventCatalogue, type EventType } from '@/lib/authstrap-client';
import { operatorApi } from '@/lib/api';
import { dateTimeFormat } from './formats';

/** What the platform's log holds: what operators did, from the event catalogue. */
const operatorEventTypes = (Object.keys(eventCatalogue) as EventType[]).filter((type) => type.startsWith('operator.'));
const eventsPerPage = 25;

/**
 * The platform's log: every operator's action (grants, sessions ended, bans, impersonations),
 * newest first, each as the backend's sentence, filtered by type and paged by the backend.
 * Where an action touched an organization, its own audit log has it too.
 */
export function PlatformLog() {
  const [type, setType] = useState('');
  const [page, setPage] = useState(1);
  const { data: events, error } = useLoad(useCallback(() => operatorApi.events({ ...(type && { type }), page, limit: eventsPerPage }), [type, page]));

  return (
    <section className="grid min-w-0 gap-4">
      <div>
        <h1>Audit log</h1>
        <p className="muted">What operators did, newest first: who acted, on whom, when and why. Each action about a user is in their organizations’ audit logs too, without the reason.</p>
      </div>
      <label className="max-w-sm">
        Event type
        <select
          value={type}
          onChange={(event) => {
            setType(event.target.value);
            setPage(1);
          }}
        >
          <option value="">Any type</option>
          {operatorEventTypes.map((option) => (
            <option key={option} value={option}>
              {option}
            </option>
          ))}
        </select>
      </label>
      <LoadError error={error} />
      {events && (
        <>
          <p className="muted" aria-live="polite">
            {events.meta.total} {events.meta.total === 1 ? 'event' : 'events'}.
          </p>
          {events.data.length > 0 && (
            <div className="table-wrap">
              <table aria-label="Operator events" className="cards">
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Event</th>
                    <th scope="col">Operator</th>
                    <th scope="col">User</th>
                  </tr>
                </thead>
                <tbody>
                  {events.data.map((event) => (
                    <tr key={event.id} className="align-top">
                      <td data-label="Time" className="min-w-28">
                        {dateTimeFormat.format(new Date(event.createdAt))}
                      </td>
                      <td data-label="Event">
                        {/* The backend's sentence, as text: names and reasons are other people's typing. */}
                        <div>{event.summary}</div>
                        <div className="muted font-mono text-xs" title={eventCatalogue[event.type as EventType] ?? undefined}>
                          {event.type}
                        </div>
                      </td>
                      <td data-label="Operator" className="break-all">
                        {event.actorEmail ?? (event.actorType === 'system' ? 'the command line' : event.actorId ?? '—')}
                      </td>
                      <td data-label="User" className="break-all">
                        {event.userId ? <Link href={`/operator/users/${event.userId}`}>{event.userEmail ?? event.userId}</Link> : '—'}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <Pager meta={events.meta} onPage={setPage} />
        </>
      )}
    </section>
  );
}
