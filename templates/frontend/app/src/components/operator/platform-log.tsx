'use client';

import Link from 'next/link';
import { useCallback, useState } from 'react';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { LoadError, useLoad } from '@/components/ui/load';
import { CardTable } from '@/components/ui/card-table';
import { EventSentence } from '@/components/ui/event-sentence';
import { Pager } from '@/components/ui/pager';
import { saveFile } from '@/components/ui/save-file';
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
  const exportCsv = useAction(async () => {
    const blob = await operatorApi.exportEvents(type ? { type } : {});
    saveFile(blob, `platform-log-${new Date().toISOString().slice(0, 10)}.csv`);
    return 'The CSV file of the events is downloaded.';
  });

  return (
    <section className="grid min-w-0 gap-4">
      <div>
        <h1>Audit log</h1>
        <p className="muted">What operators did, newest first: who acted, on whom, when and why. Each action about a user is in their organizations’ audit logs too, without the reason.</p>
      </div>
      <div className="flex flex-wrap items-end justify-between gap-2">
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
        <button type="button" className="quiet" disabled={exportCsv.pending} onClick={() => void exportCsv.run()}>
          Export CSV
        </button>
      </div>
      <OutcomeMessage outcome={exportCsv.outcome} pending={exportCsv.pending} pendingText="Preparing the CSV…" />
      <LoadError error={error} />
      {events && (
        <>
          <p className="muted" aria-live="polite">
            {events.meta.total} {events.meta.total === 1 ? 'event' : 'events'}. The export holds every event the filter matches, on every page.
          </p>
          {events.data.length > 0 && (
            <CardTable label="Operator events" columns={['Time', 'Event', 'Operator', 'User']}>
              {events.data.map((event) => (
                <tr key={event.id} className="align-top">
                  <td data-label="Time" className="min-w-28">
                    {dateTimeFormat.format(new Date(event.createdAt))}
                  </td>
                  <td data-label="Event">
                    <EventSentence event={event} />
                  </td>
                  <td data-label="Operator" className="break-words">
                    {event.actorEmail ?? (event.actorType === 'system' ? 'the command line' : event.actorId ?? '—')}
                  </td>
                  <td data-label="User" className="break-words">
                    {event.userId ? <Link href={`/operator/users/${event.userId}`}>{event.userEmail ?? event.userId}</Link> : '—'}
                  </td>
                </tr>
              ))}
            </CardTable>
          )}
          <Pager meta={events.meta} onPage={setPage} />
        </>
      )}
    </section>
  );
}
