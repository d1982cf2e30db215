/**
 * `models ps`: what a running server has loaded (as `ollama ps`), read from its GET /v1/models
 * (the lifecycle extension fields): state, weights, how long loaded and idle, when it unloads.
 * WEIGHTS is the server's `file_bytes`: the bytes of the ONNX graph and its external data files on
 * disk, or of a GGUF file and its split parts (what a load reads), the figure `models list` shows
 * under the same header. A GGUF model's quantization shows in its id where its folder holds several
 * (`name:Q4_K_M`); the listing does not say which engine runs a model, so neither does this table.
 * CONTEXT is the context served (a prompt plus its output at most); KV the bytes of KV cache a loaded
 * GGUF chat model's sequences take (its KV budget, src/engines/llama/layout.ts), `-` elsewhere.
 */
import { formatBytes } from '../models/hub/checksums.js';
import { table } from './table.js';

interface ListedModel {
  id: string;
  task?: string;
  state?: string;
  pinned?: boolean;
  file_bytes?: number | null;
  context_length?: number;
  kv_bytes?: number | null;
  loaded_at?: string | null;
  last_used_at?: string | null;
  expires_at?: string | null;
}

const ago = (iso: string | null | undefined, now: number) => (iso ? `${Math.max(0, Math.round((now - Date.parse(iso)) / 1000))} s` : '-');

export async function ps(url: string, apiKey: string | undefined, all: boolean): Promise<string> {
  const endpoint = `${url.replace(/\/+$/, '')}/v1/models`;
  let res: Response;
  try {
    res = await fetch(endpoint, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
  } catch (error) {
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND…) is its cause.
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`no server answers at ${url} (${cause?.code ?? cause?.message ?? (error as Error).message}): start one with \`npm start\`, or name it with --url`);
  }
  if (!res.ok) throw new Error(`GET ${endpoint}: ${res.status} ${(await res.text()).slice(0, 200)}`);
  const { data } = (await res.json()) as { data: ListedModel[] };
  const now = Date.now();
  const rows = data
    .filter((m) => all || m.state === 'loaded' || m.state === 'loading')
    .map((m) => [
      m.id, m.task ?? '', m.state ?? '', m.file_bytes ? formatBytes(m.file_bytes) : '-',
      m.context_length ? String(m.context_length) : '-', m.kv_bytes ? formatBytes(m.kv_bytes) : '-', ago(m.loaded_at, now), ago(m.last_used_at, now),
      m.pinned ? 'pinned' : m.expires_at ? `in ${Math.max(0, Math.round((Date.parse(m.expires_at) - now) / 1000))} s` : m.state === 'loaded' ? 'busy or never' : '-',
    ]);
  return table(['ID', 'TASK', 'STATE', 'WEIGHTS', 'CONTEXT', 'KV', 'LOADED FOR', 'IDLE FOR', 'UNLOADS'], rows);
}
