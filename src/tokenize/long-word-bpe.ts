/**
 * Byte-pair encoding of one long pre-tokenized word, with the same result as transformers.js's BPE
 * model (lowest merge rank first; among equal ranks the leftmost) in typed arrays instead of one
 * object, one JSON key and one heap entry object per symbol. The library's version takes ~13 s for a
 * one-million-character word (a prompt of one repeated character is a single word for the Qwen and
 * GPT-2 pre-tokenizers); this one well under a second. Pure; the tables are built once per
 * vocabulary.
 */

export interface MergeTable {
  /** Rank of the pair (a, b) of vocabulary ids, or undefined when they never merge. */
  rank(a: number, b: number): number | undefined;
  /** Vocabulary id that merge `rank` makes. */
  merged: Int32Array;
  /** Vocabulary id of a single character, if it has one. */
  charId(char: string): number | undefined;
  /** Entries by vocabulary id. */
  strings: readonly string[];
}

/**
 * The merge list as in tokenizer.json (pairs of strings, rank = index) over the vocabulary's ids;
 * null when a merge names a string the vocabulary lacks (then only the library knows what it does).
 */
export function buildMergeTable(merges: ReadonlyArray<readonly [string, string]>, vocab: ReadonlyMap<string, number>): MergeTable | null {
  let size = 0;
  for (const id of vocab.values()) size = Math.max(size, id + 1);
  const left = new Int32Array(merges.length);
  const right = new Int32Array(merges.length);
  const merged = new Int32Array(merges.length);
  for (let i = 0; i < merges.length; i++) {
    const [a, b] = merges[i]!;
    const ids = [vocab.get(a), vocab.get(b), vocab.get(a + b)];
    if (ids.some((id) => id === undefined)) return null;
    [left[i], right[i], merged[i]] = ids as [number, number, number];
  }
  // Pair key a * size + b: an exact integer for any vocabulary below 2^26 entries.
  const ranks = new Map<number, number>();
  for (let i = 0; i < merges.length; i++) ranks.set(left[i]! * size + right[i]!, i); // a pair listed twice: the last wins, as in the library
  const strings: string[] = [];
  for (const [s, id] of vocab) strings[id] = s;
  return { rank: (a, b) => ranks.get(a * size + b), merged, charId: (char) => vocab.get(char), strings };
}

/** The symbols `word` merges into, as strings (what the library's `bpe(word)` returns). */
export function bpeWord(table: MergeTable, word: string): string[] {
  const chars = Array.from(word);
  const n = chars.length;
  if (n < 2) return chars;
  // Vocabulary id of the symbol at each live position (a merge keeps the left position); -1 for a
  // character the vocabulary lacks (no merge involves it).
  const sym = new Int32Array(n);
  const next = new Int32Array(n);
  const prev = new Int32Array(n);
  const alive = new Uint8Array(n).fill(1);
  for (let i = 0; i < n; i++) {
    sym[i] = table.charId(chars[i]!) ?? -1;
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  // Min-heap of rank * n + position: the order of the library (rank, then original position).
  let heap = new Float64Array(n);
  let size = 0;
  const push = (pos: number) => {
    const right = next[pos]!;
    if (right === -1 || sym[pos]! < 0 || sym[right]! < 0) return;
    const rank = table.rank(sym[pos]!, sym[right]!);
    if (rank === undefined) return;
    if (size === heap.length) {
      const bigger = new Float64Array(heap.length * 2);
      bigger.set(heap);
      heap = bigger;
    }
    let i = size++;
    const key = rank * n + pos;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]! <= key) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = key;
  };
  const pop = (): number => {
    const top = heap[0]!;
    const last = heap[--size]!;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && heap[child + 1]! < heap[child]!) child++;
      if (heap[child]! >= last) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
    return top;
  };
  for (let i = 0; i + 1 < n; i++) push(i);
  while (size > 0) {
    const key = pop();
    const rank = Math.floor(key / n);
    const pos = key - rank * n;
    const right = next[pos]!;
    // Stale entry: the pair at `pos` changed since it was queued (each pair has its own rank).
    if (!alive[pos] || right === -1 || sym[pos]! < 0 || sym[right]! < 0 || table.rank(sym[pos]!, sym[right]!) !== rank) continue;
    sym[pos] = table.merged[rank]!;
    alive[right] = 0;
    next[pos] = next[right]!;
    if (next[pos] !== -1) prev[next[pos]!] = pos;
    if (prev[pos] !== -1) push(prev[pos]!);
    push(pos);
  }
  const out: string[] = [];
  for (let i = 0; i !== -1; i = next[i]!) out.push(sym[i]! >= 0 ? table.strings[sym[i]!]! : chars[i]!);
  return out;
}
