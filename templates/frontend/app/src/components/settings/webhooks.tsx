'use client';

import { useMemo, useState } from 'react';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { OutcomeMessage, useAction } from '@/components/ui/action';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { ShownOnce } from '@/components/ui/shown-once';
import { LoadError, useLoad } from '@/components/ui/load';
import { Pager } from '@/components/ui/pager';
import { eventCatalogue, type EventType, type WebhookDelivery, type WebhookEndpoint } from '@/lib/authstrap-client';
import { api } from '@/lib/api';
import { NoOrganization, Refusal } from './refusal';

const eventTypes = Object.keys(eventCatalogue) as EventType[];

/**
 * The catalogue grouped by what the events are about (`project.created` -> project), so that the
 * checklist is a short list of groups to open rather than every type at once (a phone's screen).
 */
const eventGroups = [...new Set(eventTypes.map((type) => type.split('.')[0]!))].map((group) => ({
  group,
  types: eventTypes.filter((type) => type.startsWith(`${group}.`)),
}));
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const deliveriesPerPage = 10;

/**
 * The receiver's status code of a delivery. The backend keeps it only in a failure's message
 * ("answered 500: ..."); a sent delivery was answered with some 2xx.
 */
function responseOf(delivery: WebhookDelivery): string {
  if (delivery.status === 'sent') return '2xx';
  const answered = delivery.lastError?.match(/^answered (\d{3})/);
  return answered ? answered[1]! : delivery.lastError ? 'no answer' : '—';
}

/**
 * The organization's webhook endpoints (owners and admins): add one with the event types it
 * receives (the backend's event catalogue), its secret shown once; enable, disable, rotate the
 * secret, delete; each endpoint's delivery log, paged by the backend, with redelivery (the same
 * webhook-id, so a receiver that has it can drop it).
 */
export function WebhooksSettings() {
  const { active, loaded } = useOrganizations();
  const manages = managesOrganization(active?.role);
  const [secret, setSecret] = useState<{ url: string; secret: string; rotated: boolean }>();
  const [chosen, setChosen] = useState<ReadonlySet<EventType>>(new Set());
  // Read again when the organization changes (the client sends the active one).
  const readEndpoints = useMemo(() => (active && manages ? () => api.webhookEndpoints.list() : undefined), [active, manages]);
  const { data: endpoints, error: loadError, reload: load } = useLoad(readEndpoints);

  const create = useAction(async (form: HTMLFormElement) => {
    const fields = new FormData(form);
    const description = String(fields.get('description') ?? '').trim();
    const made = await api.webhookEndpoints.create({ url: String(fields.get('url')).trim(), eventTypes: eventTypes.filter((type) => chosen.has(type)), ...(description ? { description } : {}) });
    setSecret({ url: made.url, secret: made.secret, rotated: false });
    form.reset();
    setChosen(new Set());
    await load();
  });
  const change = useAction(async (work: () => Promise<string>) => {
    const message = await work();
    await load();
    return message;
  });

  if (!active) return <NoOrganization loaded={loaded} />;
  if (!manages) return <Refusal what="webhooks" organization={active.name} role={active.role} />;
  return (
    <section className="grid gap-6">
      <div className="card">
        <h1>Webhooks</h1>
        <p className="muted mb-4">
          The backend sends each chosen event to your endpoint as a signed POST (Standard Webhooks). Verify it with the endpoint&apos;s secret; a delivery
          that fails is tried again, and the log below shows each one.
        </p>
        {secret ? (
          <ShownOnce
            region="The endpoint's secret"
            message={
              <p className="success" role="status">
                {secret.rotated ? `The secret of ${secret.url} is rotated; the old one keeps signing for a day.` : `${secret.url} is added.`} Copy the
                secret now: it is not shown again.
              </p>
            }
            values={[{ label: 'The secret', value: secret.secret, copyLabel: 'Copy the secret' }]}
            onDone={() => setSecret(undefined)}
          />
        ) : (
          <form
            className="stack"
            aria-label="New endpoint"
            onSubmit={(event) => {
              event.preventDefault();
              void create.run(event.currentTarget);
            }}
          >
            <label>
              Endpoint URL
              <input name="url" type="url" required maxLength={2048} placeholder="https://example.com/webhooks" />
            </label>
            <label>
              Description (optional)
              <input name="description" maxLength={500} />
            </label>
            <fieldset className="rounded-md border border-gray-300 p-3">
              <legend className="px-1 text-sm font-medium">Events to send (none chosen: every event)</legend>
              <p className="muted mb-2">{chosen.size === 0 ? 'Every event, including those added later.' : `${chosen.size} chosen.`}</p>
              <div className="grid items-start gap-2 sm:grid-cols-2">
                {eventGroups.map(({ group, types }) => {
                  const inGroup = types.filter((type) => chosen.has(type)).length;
                  return (
                    <details key={group} className="rounded-md border border-gray-200 bg-white px-3 py-2">
                      <summary className="cursor-pointer text-sm text-gray-900">
                        <span className="font-mono">{group}</span> <span className="muted">({inGroup ? `${inGroup} of ${types.length} chosen` : `${types.length} types`})</span>
                      </summary>
                      <div className="mt-2 grid gap-2">
                        {types.map((type) => (
                          <label key={type} className="flex items-start gap-2 text-gray-900">
                            <input
                              type="checkbox"
                              name={`event.${type}`}
                              className="mt-1"
                              checked={chosen.has(type)}
                              onChange={(event) => {
                                const next = new Set(chosen);
                                if (event.currentTarget.checked) next.add(type);
                                else next.delete(type);
                                setChosen(next);
                              }}
                            />
                            <span className="min-w-0">
                              <span className="font-mono text-sm break-all">{type}</span>
                              <span className="muted block">{eventCatalogue[type]}</span>
                            </span>
                          </label>
                        ))}
                      </div>
                    </details>
                  );
                })}
              </div>
            </fieldset>
            <div>
              <button type="submit" disabled={create.pending}>
                Add endpoint
              </button>
            </div>
            <OutcomeMessage outcome={create.outcome} pending={create.pending} pendingText="Adding…" />
          </form>
        )}
      </div>
      <div className="grid gap-3">
        <h2>Endpoints</h2>
        <OutcomeMessage outcome={change.outcome} pending={change.pending} />
        <LoadError error={loadError} />
        {endpoints?.length === 0 && <p className="muted">No endpoints yet. Add the URL of a service that should hear about this organization&apos;s changes above.</p>}
        {endpoints?.map((endpoint) => (
          <article key={endpoint.id} className="card grid gap-3" aria-label={endpoint.url}>
            <div className="grid gap-1">
              <h3 className="font-mono text-sm font-semibold break-all">{endpoint.url}</h3>
              {endpoint.description && <p className="muted">{endpoint.description}</p>}
              <p className="text-sm">
                {endpoint.enabled ? 'Enabled' : `Disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`}
                {endpoint.failureCount > 0 && ` · ${endpoint.failureCount} failed in a row`}
              </p>
              <p className="muted">Events: {endpoint.eventTypes.length ? endpoint.eventTypes.join(', ') : 'every event'}</p>
            </div>
            <div className="flex flex-wrap gap-2">
              <button
                type="button"
                className="quiet"
                aria-label={`${endpoint.enabled ? 'Disable' : 'Enable'} ${endpoint.url}`}
                disabled={change.pending}
                onClick={() =>
                  void change.run(async () => {
                    await api.webhookEndpoints.update(endpoint.id, { enabled: !endpoint.enabled });
                    return endpoint.enabled ? `${endpoint.url} is disabled: nothing is sent to it.` : `${endpoint.url} is enabled again.`;
                  })
                }
              >
                {endpoint.enabled ? 'Disable' : 'Enable'}
              </button>
              <ConfirmButton
                label="Rotate secret"
                accessibleName={`Rotate secret of ${endpoint.url}`}
                className="quiet"
                title="Rotate the secret?"
                description={<p>A new secret signs every delivery from now on. The old one signs beside it for a day, so that the receiver can switch without losing one.</p>}
                confirmLabel="Rotate"
                onConfirm={() =>
                  change.run(async () => {
                    const rotated = await api.webhookEndpoints.rotateSecret(endpoint.id);
                    setSecret({ url: rotated.url, secret: rotated.secret, rotated: true });
                    return 'The secret is rotated.';
                  })
                }
              />
              <ConfirmButton
                label="Delete"
                accessibleName={`Delete ${endpoint.url}`}
                title={`Delete ${endpoint.url}?`}
                description={<p>Nothing is sent to it any more, and its delivery log goes with it. This cannot be undone.</p>}
                confirmLabel="Delete"
                onConfirm={() =>
                  change.run(async () => {
                    await api.webhookEndpoints.delete(endpoint.id);
                    return `${endpoint.url} is deleted.`;
                  })
                }
              />
            </div>
            <DeliveryLog endpoint={endpoint} />
          </article>
        ))}
      </div>
    </section>
  );
}

/** One endpoint's deliveries, newest first, a page at a time from the backend; a finished one can be sent again. */
function DeliveryLog({ endpoint }: { endpoint: WebhookEndpoint }) {
  const [open, setOpen] = useState(false);
  const [page, setPage] = useState(1);
  // Read when opened, not before: a page of endpoints asks for no log nobody looks at.
  const readPage = useMemo(() => (open ? () => api.webhookEndpoints.deliveries(endpoint.id, { page, limit: deliveriesPerPage }) : undefined), [open, endpoint.id, page]);
  const { data: deliveries, error: loadError, reload: load } = useLoad(readPage);
  // Sent through the outbox like any delivery: the log opens (or is read again) to show it.
  const sendTest = useAction(async () => {
    await api.webhookEndpoints.sendTest(endpoint.id);
    if (open) await load();
    else setOpen(true);
    return `A test event is on its way to ${endpoint.url}; the delivery log shows it.`;
  });
  const redeliver = useAction(async (delivery: WebhookDelivery) => {
    await api.webhookEndpoints.redeliver(endpoint.id, delivery.id);
    await load();
    return `${delivery.eventType} is sent again, with the same webhook-id.`;
  });

  const regionId = `deliveries-${endpoint.id}`;
  return (
    <div className="grid gap-2">
      <div className="flex flex-wrap gap-2">
        <button type="button" className="quiet" aria-expanded={open} aria-controls={regionId} onClick={() => setOpen(!open)}>
          {open ? 'Hide the delivery log' : 'Show the delivery log'}
        </button>
        {open && (
          <button type="button" className="quiet" onClick={() => void load()}>
            Refresh
          </button>
        )}
        <button type="button" className="quiet" aria-label={`Send test event to ${endpoint.url}`} disabled={sendTest.pending} onClick={() => void sendTest.run()}>
          Send test event
        </button>
      </div>
      <OutcomeMessage outcome={sendTest.outcome} pending={sendTest.pending} pendingText="Sending a test event…" />
      {open && (
        <div id={regionId} className="grid gap-2" role="region" aria-label={`Deliveries to ${endpoint.url}`}>
          <OutcomeMessage outcome={redeliver.outcome} pending={redeliver.pending} pendingText="Sending again…" />
          <LoadError error={loadError} />
          {deliveries?.data.length === 0 && <p className="muted">Nothing sent yet. A change to one of the chosen events sends one within seconds.</p>}
          {deliveries && deliveries.data.length > 0 && (
            <>
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Event</th>
                      <th scope="col">Status</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">Response</th>
                      <th scope="col">Time</th>
                      <th scope="col">
                        <span className="sr-only">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {deliveries.data.map((delivery) => (
                      <tr key={delivery.id}>
                        {/* The id and the error wrap, so that the row fits and Redeliver stays in view. */}
                        <td>
                          <div className="font-mono wrap-anywhere">{delivery.eventType}</div>
                          <div className="muted font-mono text-xs wrap-anywhere">{delivery.id}</div>
                        </td>
                        <td>
                          {delivery.status}
                          {delivery.lastError && <div className="muted wrap-anywhere">{delivery.lastError}</div>}
                        </td>
                        <td>{delivery.attempts}</td>
                        <td>{responseOf(delivery)}</td>
                        <td>{dateFormat.format(new Date(delivery.sentAt ?? delivery.createdAt))}</td>
                        <td className="text-right whitespace-nowrap">
                          {delivery.status !== 'pending' && (
                            <button
                              type="button"
                              className="quiet"
                              aria-label={`Redeliver ${delivery.eventType} ${delivery.id}`}
                              disabled={redeliver.pending}
                              onClick={() => void redeliver.run(delivery)}
                            >
                              Redeliver
                            </button>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager meta={deliveries.meta} onPage={setPage} />
            </>
          )}
        </div>
      )}
    </div>
  );
}
