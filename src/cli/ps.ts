/**
 * `models ps`: what a running server has loaded (as `ollama ps`), read from its GET /v1/models
 * (the lifecycle extension fields): state, file size times workers, how long idle, when it unloads.
 */
import { formatBytes } from '../models/hub/checksums.js';

interface ListedModel {
  id: string;
  task?: string;
  state?: string;
  pinned?: boolean;
  file_bytes?: number | null;
  loaded_at?: string | null;
  last_used_at?: string | null;
  expires_at?: string | null;
}

const ago = (iso: string | null | undefined, now: number) => (iso ? `${Math.max(0, Math.round((now - Date.parse(iso)) / 1000))} s` : '-');

export async function ps(url: string, apiKey: string | undefined, all: boolean): Promise<string> {
  const res = await fetch(`${url.replace(/\/+$/, '')}/v1/models`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
  if (!res.ok) throw new Error(`GET ${url}/v1/models: ${res.status} ${(await res.text()).slice(0, 200)}`);
  const { data } = (await res.json()) as { data: ListedModel[] };
  const now = Date.now();
  const rows = data
    .filter((m) => all || m.state === 'loaded' || m.state === 'loading')
    .map((m) => [
      m.id, m.task ?? '', m.state ?? '', m.file_bytes ? formatBytes(m.file_bytes) : '-', ago(m.loaded_at, now), ago(m.last_used_at, now),
      m.pinned ? 'pinned' : m.expires_at ? `in ${Math.max(0, Math.round((Date.parse(m.expires_at) - now) / 1000))} s` : m.state === 'loaded' ? 'busy or never' : '-',
    ]);
  const header = ['ID', 'TASK', 'STATE', 'FILES', 'LOADED FOR', 'IDLE FOR', 'UNLOADS'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((row) => row.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}
