import { eventCatalogue } from '@/lib/authstrap-client';

/**
 * An event as a person reads it: the backend's sentence ("Olivia Owner changed Ivy's role from
 * member to admin"), with its type beneath and the catalogue's meaning of that type on hover. As
 * text: React escapes it, and names and records in it are other people's typing.
 */
export function EventSentence({ event }: { event: { type: string; summary: string } }) {
  return (
    <>
      <div>{event.summary}</div>
      <div className="muted font-mono text-xs" title={(eventCatalogue as Record<string, string>)[event.type]}>
        {event.type}
      </div>
    </>
  );
}
