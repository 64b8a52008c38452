import { describe, expect, it } from 'vitest';
import { applyChange, emptyList, type Change, type LiveList } from '../../../templates/frontend/app/src/lib/live-list.js';

/**
 * What a change from the live stream does to the page of a list in the generated app (the file
 * as the app gets it: it has no template tags). The browser half is frontend-live.test.ts.
 */

interface Row {
  id: string;
  name: string;
}
const row = (id: string, name = id): Row => ({ id, name });
const change = (what: 'created' | 'updated' | 'deleted', record: Row): Change<Row> => ({ type: `project.${what}`, organizationId: 'org', data: { record } });
const firstPage = { firstPage: true, pageSize: 3 };
const laterPage = { firstPage: false, pageSize: 3 };
const page = (ids: string[], total = ids.length): LiveList<Row> => ({ rows: ids.map((id) => row(id)), total, newElsewhere: 0 });
const ids = (list: LiveList<Row>) => list.rows.map((each) => each.id);

describe('applyChange', () => {
  it('puts a new record at the top of the first page, keeping the page its size', () => {
    const after = applyChange(page(['c', 'b', 'a'], 5), change('created', row('d')), firstPage);
    expect(ids(after)).toEqual(['d', 'c', 'b']);
    expect(after.total).toBe(6);
    expect(ids(applyChange(emptyList, change('created', row('a')), firstPage))).toEqual(['a']);
  });

  it("shows the user's own record once, whether the POST's answer or the event comes first", () => {
    const record = row('n', 'New');
    const answerFirst = applyChange(applyChange(page(['a']), change('created', record), firstPage), change('created', record), firstPage);
    expect(ids(answerFirst)).toEqual(['n', 'a']);
    expect(answerFirst.total).toBe(2);
  });

  it('on a later page, counts a new record instead of moving the rows', () => {
    const after = applyChange(page(['c', 'b'], 12), change('created', row('z')), laterPage);
    expect(ids(after)).toEqual(['c', 'b']);
    expect(after).toMatchObject({ total: 13, newElsewhere: 1 });
  });

  it('replaces an updated row in place, and ignores the update of a row not on the page', () => {
    const after = applyChange(page(['c', 'b', 'a']), change('updated', row('b', 'renamed')), firstPage);
    expect(after.rows.map((each) => each.name)).toEqual(['c', 'renamed', 'a']);
    const elsewhere = page(['c']);
    expect(applyChange(elsewhere, change('updated', row('x', 'renamed')), firstPage)).toBe(elsewhere);
  });

  it('removes a deleted row, and counts one fewer for a row on another page', () => {
    const after = applyChange(page(['c', 'b', 'a'], 4), change('deleted', row('b')), firstPage);
    expect(ids(after)).toEqual(['c', 'a']);
    expect(after.total).toBe(3);
    expect(applyChange(page(['c'], 4), change('deleted', row('q')), laterPage).total).toBe(3);
  });

  it('applied again over a fresh read, leaves alone the counts the read may already hold', () => {
    expect(applyChange(page(['c'], 4), change('deleted', row('q')), laterPage, true).total).toBe(4);
    expect(applyChange(page(['c'], 4), change('created', row('q')), laterPage, true)).toMatchObject({ total: 4, newElsewhere: 0 });
    // On the first page a new record that the read did not have is still added.
    expect(ids(applyChange(page(['c'], 1), change('created', row('q')), firstPage, true))).toEqual(['q', 'c']);
  });
});
