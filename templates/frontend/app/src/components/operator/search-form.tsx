'use client';

import { useCallback, useState } from 'react';
import { useLoad } from '@/components/ui/load';
import type { ListMeta, ListResult, OperatorSearchParams } from '@/lib/authstrap-client';

/**
 * A list the backend searches and pages (`read`, a stable function such as operatorApi.users):
 * the page of rows for the search, and a new search starting again at page 1.
 */
export function useSearchedList<Row>(read: (params: OperatorSearchParams) => Promise<ListResult<Row>>, limit: number) {
  const [search, setSearch] = useState('');
  const [page, setPage] = useState(1);
  const loaded = useLoad(useCallback(() => read({ search, page, limit }), [read, search, page, limit]));
  const onSearch = useCallback((text: string) => {
    setSearch(text);
    setPage(1);
  }, []);
  return { ...loaded, search, onSearch, setPage };
}

/**
 * The search of an operator's list: part of an address or a name, or an id, searched by the
 * backend over every row (the list is paged there). An empty search lists everything, newest first.
 */
export function SearchForm({ label, placeholder, onSearch }: { label: string; placeholder: string; onSearch(text: string): void }) {
  return (
    <form
      role="search"
      aria-label={label}
      className="flex flex-wrap items-end gap-2"
      onSubmit={(event) => {
        event.preventDefault();
        onSearch(String(new FormData(event.currentTarget).get('search') ?? '').trim());
      }}
    >
      <label className="min-w-0 grow">
        {label}
        <input name="search" type="search" placeholder={placeholder} maxLength={200} className="w-full min-w-0" />
      </label>
      <button type="submit">Search</button>
    </form>
  );
}

/** "3 users match." / "Every organization: 120." for the count above a list. */
export function matchCount(meta: ListMeta, search: string, [one, many]: [string, string]): string {
  if (!search) return `${meta.total} ${meta.total === 1 ? one : many} in all.`;
  return `${meta.total} ${meta.total === 1 ? `${one} matches` : `${many} match`} “${search}”.`;
}
