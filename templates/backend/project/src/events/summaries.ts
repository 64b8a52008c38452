import type { Queryable } from '../db/database.js';
import { eventSentence, idsNamed, namesFor, type NameBook, type Person, type SentenceEvent } from './sentences.js';

/**
 * A page of events with each one's `summary`, the sentence a person reads (sentences.ts), the names
 * it needs read in one statement for the whole page (never one per event): the users it names
 * (actors and the users the events are about), the machine keys and the SCIM directories.
 *
 * `db` is the reader's own: `User` and `apikey` have no row-level security, and the audit log's
 * readers (an organization's owners and admins) see their organization's directories; a name the
 * reader may not see reads as if deleted ("a removed directory"), never as someone else's.
 */
export async function withSummaries<Event extends SentenceEvent>(db: Queryable, events: readonly Event[]): Promise<(Event & { summary: string })[]> {
  const book = await namesOfPage(db, events);
  return events.map((event) => ({ ...event, summary: eventSentence(event, namesFor(event, book)).sentence }));
}

/** The names a page of events holds, in one statement (none when it names nobody). */
export async function namesOfPage(db: Queryable, events: readonly SentenceEvent[]): Promise<NameBook> {
  const book = { users: new Map<string, Person>(), keys: new Map<string, string | null>(), directories: new Map<string, string>() };
  const { userIds, keyIds, directoryIds } = idsNamed(events);
  if (userIds.length + keyIds.length + directoryIds.length === 0) return book;
  const { rows } = await db.query<{ kind: 'user' | 'key' | 'directory'; id: string; name: string | null; email: string | null }>(
    `SELECT 'user' AS "kind", u."id"::text AS "id", u."name", u."email" FROM "User" u WHERE u."id" = ANY ($1::uuid[])
     UNION ALL SELECT 'key', k."id"::text, k."name", NULL FROM "apikey" k WHERE k."id" = ANY ($2::uuid[])
     UNION ALL SELECT 'directory', d."id"::text, d."name", NULL FROM "authstrap_scim_directory" d WHERE d."id" = ANY ($3::uuid[])`,
    [userIds, keyIds, directoryIds],
  );
  for (const row of rows) {
    if (row.kind === 'user') book.users.set(row.id, { name: row.name, email: row.email ?? '' });
    else if (row.kind === 'key') book.keys.set(row.id, row.name);
    else if (row.name !== null) book.directories.set(row.id, row.name);
  }
  return book;
}
