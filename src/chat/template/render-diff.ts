/**
 * Two renders of a template compared (the differential analysis, ./analyze.ts): their common start,
 * their common end, and what lies between on each side. The cut never falls inside a marker: a
 * common start that ends inside `<…>` or `[…]` (two renders share `<|START_` of `<|START_TEXT|>`
 * and `<|START_THINKING|>`) is moved back to the marker's start, and a common end that starts
 * inside one forward past its end, so each side holds whole markers.
 */
export interface RenderDiff {
  prefix: string;
  /** What only `a` holds there. */
  left: string;
  /** What only `b` holds there. */
  right: string;
  suffix: string;
}

const OPENERS = '<[';
const CLOSERS = '>]';

export function diffRenders(a: string, b: string): RenderDiff {
  let p = 0;
  const most = Math.min(a.length, b.length);
  while (p < most && a[p] === b[p]) p++;
  p = markerStart(a, p);
  let s = 0;
  while (s < most - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  s = markerEnd(a, a.length - s, a.length);
  return { prefix: a.slice(0, p), left: a.slice(p, a.length - s), right: b.slice(p, b.length - s), suffix: a.slice(a.length - s) };
}

/** `p` moved back to the start of a marker it falls inside (an opener after the last closer). */
function markerStart(text: string, p: number): number {
  for (let i = p - 1; i >= 0; i--) {
    if (CLOSERS.includes(text[i]!)) return p;
    if (OPENERS.includes(text[i]!)) return i;
  }
  return p;
}

/** The length of the common end, shortened to start after a marker that `at` falls inside. */
function markerEnd(text: string, at: number, length: number): number {
  for (let i = at; i < length; i++) {
    if (OPENERS.includes(text[i]!)) return length - at;
    if (CLOSERS.includes(text[i]!)) return length - (i + 1);
  }
  return length - at;
}
