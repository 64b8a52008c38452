import type { AuditEventDay } from '@/lib/authstrap-client';

const dayMs = 24 * 60 * 60 * 1000;
/** More days than this are shown as the last ones only: a bar per day stays wide enough to see. */
const maxDays = 180;
/** Without a start chosen, at least this many days are drawn, so that one busy day is not one wide block. */
const minDays = 14;
const barWidth = 10;
const chartHeight = 100;

/** Every day from `first` to `last` (YYYY-MM-DD, UTC), at most the last maxDays. */
function daysBetween(first: string, last: string, longest = maxDays): string[] {
  const days: string[] = [];
  const end = Date.parse(`${last}T00:00:00Z`);
  for (let time = Math.max(Date.parse(`${first}T00:00:00Z`), end - (longest - 1) * dayMs); time <= end; time += dayMs) days.push(new Date(time).toISOString().slice(0, 10));
  return days;
}

/**
 * Events per day as bars, drawn as SVG by hand (docs/frontend.md: a chart library would weigh more
 * than this whole page). The backend counts the days (GET /audit-events/per-day) over the whole
 * filtered range; days without events are drawn as empty. Screen readers get the chart's summary
 * as its name, and every day's count in a table beside it. What is counted is `label` ("Sign-ups"),
 * one of them `units` (["sign-up", "sign-ups"]); `longest` days at most are drawn (180 unless set).
 */
export function EventsPerDayChart({
  days,
  from,
  to,
  label = 'Events',
  units = ['event', 'events'],
  longest = maxDays,
}: {
  days: AuditEventDay[];
  from?: string;
  to?: string;
  label?: string;
  units?: [string, string];
  longest?: number;
}) {
  const counted = new Map(days.map((day) => [day.day, day.count]));
  const last = to ?? days[days.length - 1]?.day ?? new Date().toISOString().slice(0, 10);
  const earliestShown = new Date(Date.parse(`${last}T00:00:00Z`) - (minDays - 1) * dayMs).toISOString().slice(0, 10);
  const first = from ?? (days[0] && days[0].day < earliestShown ? days[0].day : earliestShown);
  if (first > last) return <p className="muted">No {units[1]} in this range.</p>;
  const shown = daysBetween(first, last, longest);
  const highest = Math.max(1, ...shown.map((day) => counted.get(day) ?? 0));
  const total = days.reduce((sum, day) => sum + day.count, 0);
  const summary = `${total} ${total === 1 ? units[0] : units[1]} from ${shown[0]} to ${shown[shown.length - 1]} (UTC), at most ${highest} on a day`;
  return (
    <figure className="grid min-w-0 gap-1">
      <svg
        role="img"
        aria-label={summary}
        viewBox={`0 0 ${shown.length * barWidth} ${chartHeight}`}
        preserveAspectRatio="none"
        className="h-28 w-full rounded-md border border-gray-200 bg-white"
      >
        {shown.map((day, index) => {
          const count = counted.get(day) ?? 0;
          const height = (count / highest) * (chartHeight - 4);
          return (
            <rect key={day} x={index * barWidth + 1} y={chartHeight - height} width={barWidth - 2} height={height} className="fill-accent">
              <title>{`${day}: ${count}`}</title>
            </rect>
          );
        })}
      </svg>
      <figcaption className="muted flex flex-wrap justify-between gap-x-2">
        <span>{shown[0]}</span>
        <span>
          {label} per day (UTC), highest {highest}
        </span>
        <span>{shown[shown.length - 1]}</span>
      </figcaption>
      {/* In a hidden box: a table ignores the 1px width that sr-only gives it, and would widen the page. */}
      <div className="sr-only">
        <table>
          <caption>{label} per day</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col">{label}</th>
            </tr>
          </thead>
          <tbody>
            {days.map((day) => (
              <tr key={day.day}>
                <td>{day.day}</td>
                <td>{day.count}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}
