import { diffArrays } from 'diff';

/**
 * A three-way merge of text by lines, as `git merge-file --diff3` does it: the changes from the
 * base to the user's file and from the base to this version's template are both applied; where
 * they touch the same lines (or lines next to each other) and differ, both are kept between
 * conflict markers, with the base between them. The line diff is jsdiff's; the merge is ours.
 */

export interface MergeLabels {
  ours: string;
  base: string;
  theirs: string;
}

export interface MergeResult {
  text: string;
  /** How many regions are left between conflict markers. */
  conflicts: number;
}

/** One change from the base: the base's lines [start, end) become `lines`. */
interface Change {
  start: number;
  end: number;
  lines: string[];
}

/** Lines with their ends kept, so that the text comes back byte for byte. */
const linesOf = (text: string): string[] => text.match(/[^\n]*\n|[^\n]+$/g) ?? [];

function changesFrom(base: string[], edited: string[]): Change[] {
  const changes: Change[] = [];
  let at = 0;
  let open: Change | undefined;
  for (const part of diffArrays(base, edited)) {
    if (!part.added && !part.removed) {
      if (open) changes.push(open);
      open = undefined;
      at += part.value.length;
      continue;
    }
    open ??= { start: at, end: at, lines: [] };
    if (part.removed) {
      open.end += part.value.length;
      at += part.value.length;
    } else open.lines.push(...part.value);
  }
  if (open) changes.push(open);
  return changes;
}

/** The lines a side has for the base's [start, end): its changes applied, the base elsewhere. */
function sideOf(base: string[], changes: Change[], start: number, end: number): string[] {
  const lines: string[] = [];
  let at = start;
  for (const change of changes) {
    lines.push(...base.slice(at, change.start), ...change.lines);
    at = change.end;
  }
  return [...lines, ...base.slice(at, end)];
}

const sameLines = (a: string[], b: string[]) => a.length === b.length && a.every((line, i) => line === b[i]);

/** A conflict region's lines end with a line end, so that a marker always starts a line. */
const ended = (lines: string[]) => (lines.length > 0 && !lines[lines.length - 1]!.endsWith('\n') ? [...lines.slice(0, -1), `${lines[lines.length - 1]}\n`] : lines);

export function mergeThreeWays(base: string, ours: string, theirs: string, labels: MergeLabels): MergeResult {
  const baseLines = linesOf(base);
  const sides = [changesFrom(baseLines, linesOf(ours)), changesFrom(baseLines, linesOf(theirs))] as const;
  // Every change of both sides, by where it starts in the base.
  const all = [...sides[0].map((change) => ({ change, side: 0 })), ...sides[1].map((change) => ({ change, side: 1 }))].sort(
    (a, b) => a.change.start - b.change.start || a.change.end - b.change.end,
  );
  const out: string[] = [];
  let conflicts = 0;
  let at = 0;
  for (let i = 0; i < all.length; ) {
    const start = all[i]!.change.start;
    let end = all[i]!.change.end;
    const region: { change: Change; side: number }[] = [];
    // Changes that overlap or touch (no unchanged line between them) form one region, as in git.
    while (i < all.length && (region.length === 0 || all[i]!.change.start <= end)) {
      region.push(all[i]!);
      end = Math.max(end, all[i]!.change.end);
      i++;
    }
    out.push(...baseLines.slice(at, start));
    at = end;
    const userChanges = region.filter((entry) => entry.side === 0).map((entry) => entry.change);
    const templateChanges = region.filter((entry) => entry.side === 1).map((entry) => entry.change);
    const oursLines = sideOf(baseLines, userChanges, start, end);
    const theirsLines = sideOf(baseLines, templateChanges, start, end);
    if (templateChanges.length === 0 || sameLines(oursLines, theirsLines)) out.push(...oursLines);
    else if (userChanges.length === 0) out.push(...theirsLines);
    else {
      conflicts++;
      out.push(
        `<<<<<<< ${labels.ours}\n`,
        ...ended(oursLines),
        `||||||| ${labels.base}\n`,
        ...ended(baseLines.slice(start, end)),
        '=======\n',
        ...ended(theirsLines),
        `>>>>>>> ${labels.theirs}\n`,
      );
    }
  }
  out.push(...baseLines.slice(at));
  return { text: out.join(''), conflicts };
}

/** The 1-based numbers of the lines that are conflict markers (as git writes them). */
export function conflictMarkerLines(text: string): number[] {
  return linesOf(text).flatMap((line, i) => (/^(<{7}|>{7})( |\n|$)|^(={7}|\|{7})( |\n|$)/.test(line) ? [i + 1] : []));
}
