'use client';

import { useCallback, useEffect, useRef, useState } from 'react';
import { AuthstrapError } from '@/lib/authstrap-client';
import { applyChange, emptyList, type Change, type LiveList } from '@/lib/live-list';

/** Whether the page is following the changes: not yet, yes, after a dropped connection, or not at all. */
export type LiveStatus = 'connecting' | 'live' | 'reconnecting' | 'off';

/** What a subscription asks for: the typed client's `subscribe()` options that this hook uses. */
interface LiveOptions<Row> {
  onEvent(change: Change<Row>): void;
  onReset(): void;
  onError(error: AuthstrapError): void;
  onConnectionChange(connected: boolean): void;
  signal: AbortSignal;
}

export interface LiveListOptions<Row> {
  /** The organization the list is read in; a new one reads and subscribes again. */
  organizationId: string | undefined;
  pageSize: number;
  /** One page of the list, newest first. */
  read(page: number): Promise<{ data: Row[]; meta: { total: number } }>;
  /** The entity's live stream (the typed client's `subscribe`); without it the list is read only. */
  subscribe?(options: LiveOptions<Row>): Promise<unknown>;
}

/** A change the user made on this page, as the answer to their request tells it. */
const ownChange = <Row,>(type: string, record: Row): Change<Row> => ({ type, organizationId: '', data: { record } });

/**
 * A page of a list that shows other people's changes as they happen (docs/frontend.md in
 * authstrap, "Live updates"). It subscribes first and reads the page once the stream is open, so
 * that nothing committed in between is missed; the changes that arrive while a page is being
 * read are applied again over the read's answer. After a `reset` (the stream could not resume
 * where it stopped) the page is read again. The stream closes when the component unmounts or the
 * organization changes. It authenticates as the page's reads do: the same client, the same
 * session cookie, the same x-organization-id.
 */
export function useLiveList<Row extends { id: string | number }>(options: LiveListOptions<Row>) {
  const [list, setList] = useState<LiveList<Row>>(emptyList);
  const [page, setPage] = useState(1);
  const [status, setStatus] = useState<LiveStatus>('connecting');
  const [error, setError] = useState<string>();
  // The callbacks of the stream outlive renders: they read these, not a render's values.
  const latest = useRef(options);
  latest.current = options;
  const shownPage = useRef(1);
  const arrivedWhileReading = useRef<Change<Row>[] | undefined>(undefined);
  const reads = useRef(0);
  const where = (pageNumber: number) => ({ firstPage: pageNumber === 1, pageSize: latest.current.pageSize });

  const goTo = useCallback(async (pageNumber: number) => {
    const read = ++reads.current;
    shownPage.current = pageNumber;
    setPage(pageNumber);
    arrivedWhileReading.current = [];
    try {
      const { data, meta } = await latest.current.read(pageNumber);
      if (read !== reads.current) return; // a later read (another page, another organization) replaced this one
      const arrived = arrivedWhileReading.current ?? [];
      arrivedWhileReading.current = undefined;
      const fresh = { rows: data, total: meta.total, newElsewhere: 0 };
      setList(arrived.reduce((list, change) => applyChange(list, change, where(pageNumber), true), fresh));
      setError(undefined);
    } catch (failure) {
      if (read === reads.current) setError(messageOf(failure));
    }
  }, []);

  /** The user's own new record, from the answer to their POST (its event may come before or after: it is shown once). */
  const added = useCallback(async (record: Row) => {
    if (shownPage.current !== 1) return goTo(1);
    setList((list) => applyChange(list, ownChange('.created', record), where(1)));
  }, [goTo]);

  /** The user's own edit, from the answer to their PATCH (its event, before or after, replaces the same row). */
  const changed = useCallback((record: Row) => setList((list) => applyChange(list, ownChange('.updated', record), where(shownPage.current))), []);

  // A deletion comes twice when the user makes it, as the answer to their DELETE and as the
  // stream's event, in either order; the second finds no row and would count it off the total
  // again. Each id's first deletion counts, the second is only struck off here.
  const deletions = useRef(new Set<Row['id']>());
  const deleteOnce = useCallback((change: Change<Row>) => {
    const { id } = change.data.record;
    if (deletions.current.delete(id)) return;
    deletions.current.add(id);
    setList((list) => applyChange(list, change, where(shownPage.current)));
  }, []);

  /** The user's own delete, from their DELETE's success. */
  const removed = useCallback((record: Row) => deleteOnce(ownChange('.deleted', record)), [deleteOnce]);

  const { organizationId } = options;
  useEffect(() => {
    if (!organizationId) return;
    setList(emptyList);
    const { subscribe } = latest.current;
    if (!subscribe) {
      setStatus('off');
      void goTo(1);
      return;
    }
    const closing = new AbortController();
    setStatus('connecting');
    subscribe({
      signal: closing.signal,
      onEvent(change) {
        // A stream belongs to one organization; this guards the moment of a switch.
        if (change.organizationId !== organizationId) return;
        arrivedWhileReading.current?.push(change);
        if (change.type.endsWith('.deleted')) deleteOnce(change);
        else setList((list) => applyChange(list, change, where(shownPage.current)));
      },
      onReset: () => void goTo(shownPage.current),
      onConnectionChange: (connected) => setStatus(connected ? 'live' : 'reconnecting'),
      onError(failure) {
        setStatus('off');
        setError(failure.message);
      },
    }).then(
      () => !closing.signal.aborted && setStatus('live'),
      // Refused (too many streams, say): the page still lists, without live changes.
      () => !closing.signal.aborted && setStatus('off'),
    ).finally(() => {
      if (!closing.signal.aborted) void goTo(1);
    });
    return () => closing.abort();
  }, [organizationId, goTo, deleteOnce]);

  return { ...list, page, status, error, setError, goTo, added, changed, removed };
}

/** A small sign of whether the page follows changes, with its state for screen readers too. */
export function LiveIndicator({ status }: { status: LiveStatus }) {
  const look: Record<LiveStatus, { text: string; label: string; dot: string }> = {
    connecting: { text: 'Connecting…', label: 'Live updates: connecting', dot: 'bg-gray-400' },
    live: { text: 'Live', label: 'Live updates: on', dot: 'bg-green-600' },
    reconnecting: { text: 'Reconnecting…', label: 'Live updates: reconnecting', dot: 'bg-amber-500' },
    off: { text: 'Not live', label: 'Live updates: off, reload to see changes', dot: 'bg-gray-400' },
  };
  const { text, label, dot } = look[status];
  return (
    <span role="status" aria-label={label} title={label} className="inline-flex items-center gap-1.5 text-xs font-normal text-gray-600">
      <span aria-hidden="true" className={`size-2 rounded-full ${dot}`} />
      {text}
    </span>
  );
}

/** The backend's message for a typed error; anything else as text. */
export function messageOf(failure: unknown): string {
  if (failure instanceof AuthstrapError) return failure.message;
  return failure instanceof Error ? failure.message : String(failure);
}
