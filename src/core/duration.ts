/** Durations as people write them in settings and headers. */

/** A duration: `5m`, `30s`, `1h`, `250ms`, a bare number of seconds, or negative (forever), as Ollama's keep_alive. */
export function parseDuration(value: string): number | undefined {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(value);
  if (!m) return undefined;
  const n = Number(m[1]);
  if (n < 0) return -1;
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h']);
}
