/**
 * One page of a list, kept up to date by the changes a live stream (GET /realtime) delivers. Pure:
 * what the page shows after a change, nothing else. The list is newest first (createdAt desc), so
 * a record someone creates belongs at the top of the first page; on a later page it would push
 * every row down by one under the reader's eyes, so there it is only counted ("2 new") until
 * they go to the first page.
 */

/** What the page shows: its rows, the list's total, and the records created since that are not on it. */
export interface LiveList<Row> {
  rows: Row[];
  total: number;
  newElsewhere: number;
}

/** A change as the stream delivers it: `project.created`, `project.updated` or `project.deleted`, with the record. */
export interface Change<Row> {
  type: string;
  organizationId: string;
  data: { record: Row };
}

export interface Where {
  firstPage: boolean;
  pageSize: number;
}

export const emptyList: LiveList<never> = { rows: [], total: 0, newElsewhere: 0 };

const replaced = <Row>(rows: Row[], at: number, record: Row) => rows.map((row, index) => (index === at ? record : row));

/**
 * The list after one change. A record already on the page is replaced, not added again: the
 * user's own creation arrives twice, as the answer to their POST and as the stream's event, in
 * either order. `replayed` marks a change that arrived while the page was being read, applied
 * again over what the read answered: the read may already count it, so a record that is not on the
 * page leaves the total alone.
 */
export function applyChange<Row extends { id: string | number }>(list: LiveList<Row>, change: Change<Row>, where: Where, replayed = false): LiveList<Row> {
  const { record } = change.data;
  const at = list.rows.findIndex((row) => row.id === record.id);
  switch (change.type.slice(change.type.lastIndexOf('.') + 1)) {
    case 'created':
      if (at >= 0) return { ...list, rows: replaced(list.rows, at, record) };
      if (where.firstPage) return { ...list, rows: [record, ...list.rows].slice(0, where.pageSize), total: list.total + 1 };
      return replayed ? list : { ...list, total: list.total + 1, newElsewhere: list.newElsewhere + 1 };
    case 'updated':
      return at >= 0 ? { ...list, rows: replaced(list.rows, at, record) } : list;
    case 'deleted':
      if (at >= 0) return { ...list, rows: list.rows.filter((_, index) => index !== at), total: list.total - 1 };
      return replayed ? list : { ...list, total: Math.max(0, list.total - 1) };
    default:
      return list;
  }
}
