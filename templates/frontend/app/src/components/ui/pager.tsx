'use client';

import type { ListMeta } from '@/lib/authstrap-client';

/** A list paged by the backend: previous and next, with where this page is (nothing when it all fits on one). */
export function Pager({ meta, onPage }: { meta: ListMeta; onPage(page: number): void }) {
  if (meta.totalPages <= 1) return null;
  return (
    <nav aria-label="Pages" className="flex flex-wrap items-center gap-2">
      <button type="button" className="quiet" disabled={meta.page <= 1} onClick={() => onPage(meta.page - 1)}>
        Previous
      </button>
      <span className="muted">
        Page {meta.page} of {meta.totalPages} ({meta.total} in all)
      </span>
      <button type="button" className="quiet" disabled={meta.page >= meta.totalPages} onClick={() => onPage(meta.page + 1)}>
        Next
      </button>
    </nav>
  );
}
