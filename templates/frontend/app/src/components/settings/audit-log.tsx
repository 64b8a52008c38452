'use client';

import { useCallback, useMemo, useState } from 'react';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { LoadError, useLoad } from '@/components/ui/load';
import { EventSentence } from '@/components/ui/event-sentence';
import { Pager } from '@/components/ui/pager';
import { saveFile } from '@/components/ui/save-file';
import { eventCatalogue, type AuditEventFilter, type EventType } from '@/lib/authstrap-client';
import { api } from '@/lib/api';
import { actorInWords, unnamed, type ActorNames } from './actor';
import { EventsPerDayChart } from './events-per-day-chart';
import { NoOrganization, Refusal } from './refusal';

const eventTypes = Object.keys(eventCatalogue) as EventType[];
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const eventsPerPage = 25;
const dayMs = 24 * 60 * 60 * 1000;

/** What the filter form holds: each empty when it does not narrow. Days are YYYY-MM-DD, in UTC. */
interface Filters {
  actorId: string;
  type: string;
  entity: string;
  from: string;
  to: string;
}
const noFilters: Filters = { actorId: '', type: '', entity: '', from: '', to: '' };

/** The form's filters as the backend reads them: `to` is a whole day, so the range ends where the next one starts. */
function auditEventFilter(filters: Filters): AuditEventFilter {
  const createdAt = {
    ...(filters.from && { gte: `${filters.from}T00:00:00.000Z` }),
    ...(filters.to && { lt: new Date(Date.parse(`${filters.to}T00:00:00Z`) + dayMs).toISOString() }),
  };
  return {
    ...(filters.actorId && { actorId: filters.actorId }),
    ...(filters.type && { type: filters.type }),
    ...(filters.entity && { entity: filters.entity }),
    ...(Object.keys(createdAt).length > 0 && { createdAt }),
  };
}

const noNames: ActorNames = { members: new Map(), machineKeys: new Map() };

/**
 * The organization's audit log (owners and admins): what happened in a sentence the backend writes
 * ("Olivia Owner changed Ivy's role from member to admin"), its type beside it, filtered by actor, event
 * type, entity and days; a page at a time from the backend, each event's JSON a click away; the
 * events per day over the whole filtered range as a chart; the filtered range as CSV, written by
 * the backend (all pages, streamed), not assembled here.
 */
export function AuditLogSettings() {
  const { active, loaded } = useOrganizations();
  const manages = managesOrganization(active?.role);
  const [filters, setFilters] = useState<Filters>(noFilters);
  const [page, setPage] = useState(1);
  const filter = useMemo(() => auditEventFilter(filters), [filters]);

  // The members' names, for the actor filter and the table, and the machine keys' (from their
  // key.created events, which a revoked key's keep). Read again when the organization changes.
  const readNames = useMemo(
    () =>
      active && manages
        ? async (): Promise<ActorNames> => {
            const [members, keysCreated] = await Promise.all([api.member.list({ limit: 100 }), api.auditEvents.list({ filter: { type: 'key.created' }, limit: 100 })]);
            const ids = members.data.map((member) => member.userId);
            const users = ids.length ? (await api.User.list({ limit: 100, filter: { id: { in: ids } } })).data : [];
            return {
              members: new Map(users.map((user) => [user.id, user.name || user.email])),
              machineKeys: new Map(keysCreated.data.flatMap((event) => (event.entityId && typeof event.data.name === 'string' ? [[event.entityId, event.data.name]] : []))),
            };
          }
        : undefined,
    [active, manages],
  );
  const { data: names } = useLoad(readNames);
  const readPage = useMemo(() => (active && manages ? () => api.auditEvents.list({ filter, page, limit: eventsPerPage }) : undefined), [active, manages, filter, page]);
  const { data: events, error: loadError } = useLoad(readPage);
  const readDays = useMemo(() => (active && manages ? () => api.auditEvents.perDay(filter) : undefined), [active, manages, filter]);
  const { data: days, error: daysError } = useLoad(readDays);

  const apply = useCallback((form: HTMLFormElement) => {
    const fields = new FormData(form);
    const value = (name: keyof Filters) => String(fields.get(name) ?? '').trim();
    setFilters({ actorId: value('actorId'), type: value('type'), entity: value('entity'), from: value('from'), to: value('to') });
    setPage(1);
  }, []);
  const exportCsv = useAction(async () => {
    const blob = await api.auditEvents.exportCsv(filter);
    saveFile(blob, `audit-log-${new Date().toISOString().slice(0, 10)}.csv`);
    return 'The CSV file of the filtered events is downloaded.';
  });

  if (!active) return <NoOrganization loaded={loaded} />;
  if (!manages) return <Refusal what="the audit log" organization={active.name} role={active.role} />;
  const actorNames = names ?? noNames;
  return (
    <section className="grid min-w-0 gap-4">
      <div>
        <h1>Audit log</h1>
        <p className="muted">
          What happened in {active.name}, who did it and when: every change to its records, its members, invitations, keys and webhooks. Days are in
          UTC.
        </p>
      </div>
      <form
        className="card grid min-w-0 gap-3 sm:grid-cols-2 lg:grid-cols-3"
        aria-label="Filter the audit log"
        onSubmit={(event) => {
          event.preventDefault();
          apply(event.currentTarget);
        }}
        onReset={() => {
          setFilters(noFilters);
          setPage(1);
        }}
      >
        <label>
          Actor
          <select name="actorId" defaultValue="" className="w-full min-w-0">
            <option value="">Anyone</option>
            {[...actorNames.members].map(([id, name]) => (
              <option key={id} value={id}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Event type
          <select name="type" defaultValue="" className="w-full min-w-0">
            <option value="">Any type</option>
            {eventTypes.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </label>
        <label>
          Entity
          <input name="entity" placeholder="e.g. member, Project" maxLength={200} className="w-full min-w-0" />
        </label>
        <label>
          From
          <input name="from" type="date" className="w-full min-w-0" />
        </label>
        <label>
          To
          <input name="to" type="date" className="w-full min-w-0" />
        </label>
        <div className="flex flex-wrap items-end gap-2">
          <button type="submit">Apply filters</button>
          <button type="reset" className="quiet">
            Clear
          </button>
        </div>
      </form>

      <div className="card grid min-w-0 gap-2">
        <h2>Events per day</h2>
        <LoadError error={daysError} />
        {days && <EventsPerDayChart days={days} from={filters.from || undefined} to={filters.to || undefined} />}
      </div>

      <div className="grid min-w-0 gap-2">
        <div className="flex flex-wrap items-center justify-between gap-2">
          <h2 className="mb-0">Events</h2>
          <button type="button" className="quiet" disabled={exportCsv.pending} onClick={() => void exportCsv.run()}>
            Export CSV
          </button>
        </div>
        <p className="muted" aria-live="polite">
          {events ? `${events.meta.total} ${events.meta.total === 1 ? 'event matches' : 'events match'}.` : ''} The export holds every event the filters match, on
          every page.
        </p>
        <OutcomeMessage outcome={exportCsv.outcome} pending={exportCsv.pending} pendingText="Preparing the CSV…" />
        <LoadError error={loadError} />
        {events?.data.length === 0 && <p className="muted">No events match these filters. Clear them, or widen the days.</p>}
        {events && events.data.length > 0 && (
          <>
            <div className="table-wrap">
              <table aria-label="Events" className="cards">
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Event</th>
                    <th scope="col">Actor</th>
                    <th scope="col">Entity</th>
                    <th scope="col">Details</th>
                  </tr>
                </thead>
                <tbody>
                  {events.data.map((event) => (
                    <tr key={event.id} className="align-top">
                      <td className="min-w-28" data-label="Time">
                        {dateFormat.format(new Date(event.createdAt))}
                      </td>
                      <td data-label="Event">
                        <EventSentence event={event} />
                      </td>
                      <td className="min-w-28" data-label="Actor">
                        {actorInWords(event, actorNames)}
                        {/* A former member is known by id only: their name went with their membership. */}
                        {unnamed(event, actorNames) && <div className="muted font-mono text-xs break-all">{event.actorId}</div>}
                        {/* Made with a session an operator of the platform opened as this member (docs/operator.md): support acted in their name. */}
                        {typeof event.data.impersonatedBy === 'string' && <div className="badge warning mt-1">An operator signed in as them</div>}
                      </td>
                      <td className="min-w-28" data-label="Entity">
                        {event.entity ?? '—'}
                        {event.entityId && <div className="muted font-mono text-xs break-all">{event.entityId}</div>}
                      </td>
                      <td>
                        {/* Relative: the summary's screen-reader text is placed in it, not at the page's edge (which would widen the page). */}
                        <details className="relative">
                          <summary className="cursor-pointer text-accent">
                            JSON<span className="sr-only"> of {event.type}</span>
                          </summary>
                          {/* Focusable, so that a keyboard scrolls a long line too. */}
                          <pre className="mt-2 max-w-[28rem] overflow-x-auto rounded-md bg-gray-100 p-2 text-xs" tabIndex={0}>
                            {JSON.stringify(event, null, 2)}
                          </pre>
                        </details>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager meta={events.meta} onPage={setPage} />
          </>
        )}
      </div>
    </section>
  );
}
