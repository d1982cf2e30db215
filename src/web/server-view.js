// The server view: loaded models, their memory, idle timers, queue and throughput.
import { api, errorMessage, retryAfterKey } from './api.js';
import { $, el } from './dom.js';
import { loadModels, models, setModels } from './models.js';

/**
 * Loaded models, their memory, idle timers, queue and throughput: GET /metrics (Prometheus text,
 * parsed here) and GET /v1/models, polled while the view is open. Rates are the counters'
 * differences between two polls. Charts are hand-made SVG polylines.
 */
const POLL_MS = 2000;
/** 3 minutes of samples at POLL_MS. */
const HISTORY = 90;
const SVG_NS = 'http://www.w3.org/2000/svg';

let pollTimer = null;
let polling = false;
/** The previous poll's counters, for rates: {t, tokens: Map('model\u0000direction' -> total)}. */
let previous = null;
/** One sample a poll: {out, in, inflight, queued, rss, modelBytes, perModel: Map(id -> generated tokens/s)}. */
const samples = [];
/** The table's rows, kept from poll to poll (so a focused button stays focused): id -> row parts. */
const rows = new Map();
/** The load and unload routes answered 404: the server does not serve them (--model-admin false). */
let adminOff = false;
/** Models with a load or unload under way (their button waits). */
const busy = new Set();

/** Prometheus text exposition format: one sample a line, `name{label="value",...} number`. */
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || '').matchAll(/([A-Za-z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** A metric's values by model. */
function byModel(metrics, name) {
  const map = new Map();
  for (const s of metrics) if (s.name === name && s.labels.model !== undefined) map.set(s.labels.model, (map.get(s.labels.model) || 0) + s.value);
  return map;
}

const mib = (bytes) => `${(bytes / 1048576).toFixed(1)} MiB`;

function duration(ms) {
  if (ms <= 0) return 'now';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

function ago(iso) {
  if (!iso) return '';
  return `${duration(Date.now() - Date.parse(iso))} ago`;
}

async function poll() {
  if (polling) return;
  polling = true;
  try {
    const [metricsResponse, modelsResponse] = await Promise.all([api('/metrics'), api('/v1/models')]);
    if (!metricsResponse.ok) throw new Error(`/metrics ${metricsResponse.status}: ${await errorMessage(metricsResponse)}`);
    if (!modelsResponse.ok) throw new Error(`/v1/models ${modelsResponse.status}: ${await errorMessage(modelsResponse)}`);
    const metrics = parseMetrics(await metricsResponse.text());
    setModels((await modelsResponse.json()).data || []);
    record(metrics);
    drawServer(metrics);
    $('server-updated').textContent = `Updated ${new Date().toLocaleTimeString()}.`;
    $('server-updated').className = 'status';
  } catch (error) {
    // Asked for a key: no more polls (each would ask again) until one is given.
    if (error.status === 401) {
      stopPolling();
      retryAfterKey(() => {
        loadModels();
        if (!$('view-server').hidden) startPolling();
      });
    }
    $('server-updated').textContent = `Could not read the server: ${error.message}`;
    $('server-updated').className = 'status error';
  } finally {
    polling = false;
  }
}

function record(metrics) {
  const t = performance.now() / 1000;
  const tokens = new Map();
  for (const s of metrics) if (s.name === 'model_tokens_total') tokens.set(`${s.labels.model}\u0000${s.labels.direction}`, s.value);
  const rate = (model, direction) => {
    if (!previous) return null;
    const key = `${model}\u0000${direction}`;
    const dt = t - previous.t;
    return dt > 0 ? Math.max(0, ((tokens.get(key) || 0) - (previous.tokens.get(key) || 0)) / dt) : null;
  };
  const ids = models.map((m) => m.id);
  const perModel = new Map(ids.map((id) => [id, rate(id, 'output')]));
  const sum = (values) => values.reduce((a, b) => a + (b || 0), 0);
  const sumOf = (name) => sum([...byModel(metrics, name).values()]);
  const rss = metrics.find((s) => s.name === 'process_resident_memory_bytes');
  if (previous) {
    samples.push({
      out: sum([...perModel.values()]),
      in: sum(ids.map((id) => rate(id, 'input'))),
      inflight: sumOf('model_requests_inflight'),
      queued: sumOf('model_queue_depth'),
      rss: rss ? rss.value / 1048576 : 0,
      modelBytes: (sumOf('model_loaded_bytes') + sumOf('worker_heap_used_bytes') + sumOf('prompt_cache_bytes')) / 1048576,
      perModel,
    });
    if (samples.length > HISTORY) samples.shift();
  }
  previous = { t, tokens };
}

/** An SVG line chart of `series` (each {values, className}), scaled to the largest value. */
function lineChart(series, label, width = 300, height = 64) {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('class', 'chart');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  const max = Math.max(1e-9, ...series.flatMap((s) => s.values.filter((v) => Number.isFinite(v))));
  const grid = document.createElementNS(SVG_NS, 'line');
  for (const [k, v] of Object.entries({ x1: 0, x2: width, y1: height - 0.5, y2: height - 0.5, class: 'axis' })) grid.setAttribute(k, String(v));
  svg.append(grid);
  for (const s of series) {
    // The samples so far span the width (up to HISTORY of them: the last 3 minutes).
    const step = width / Math.max(1, s.values.length - 1);
    const points = s.values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - ((v || 0) / max) * (height - 6)).toFixed(1)}`);
    if (points.length === 1) points.push(points[0].replace(/^[^,]+/, String(width))); // one sample: a flat line
    const line = document.createElementNS(SVG_NS, 'polyline');
    line.setAttribute('points', points.join(' '));
    line.setAttribute('class', s.className);
    svg.append(line);
  }
  return svg;
}

function setChart(id, series, value, label) {
  const card = $(id);
  card.querySelector('svg')?.remove();
  card.insertBefore(lineChart(series, label), $(`${id}-value`));
  $(`${id}-value`).textContent = value;
}

function drawServer(metrics) {
  const last = samples.at(-1);
  const fixed = (v, digits = 1) => (v === null || v === undefined ? '–' : v.toFixed(digits));
  setChart('chart-tokens', [{ values: samples.map((s) => s.in), className: 's2' }, { values: samples.map((s) => s.out), className: 's1' }],
    last ? `${fixed(last.out)} generated · ${fixed(last.in)} prompt tokens/s` : 'measuring…', 'Tokens per second, generated and prompt');
  setChart('chart-requests', [{ values: samples.map((s) => s.queued), className: 's2' }, { values: samples.map((s) => s.inflight), className: 's1' }],
    last ? `${last.inflight} in flight · ${last.queued} queued` : 'measuring…', 'Requests in flight and queued');
  setChart('chart-memory', [{ values: samples.map((s) => s.modelBytes), className: 's2' }, { values: samples.map((s) => s.rss), className: 's1' }],
    last ? `${fixed(last.rss, 0)} MiB process · ${fixed(last.modelBytes, 0)} MiB models` : 'measuring…', 'Memory of the process and of the loaded models, MiB');

  const files = byModel(metrics, 'model_loaded_bytes');
  const heaps = byModel(metrics, 'worker_heap_used_bytes');
  const caches = byModel(metrics, 'prompt_cache_bytes');
  const inflight = byModel(metrics, 'model_requests_inflight');
  const queued = byModel(metrics, 'model_queue_depth');
  const body = $('server-table').tBodies[0];
  for (const [id, row] of rows) {
    if (!models.some((m) => m.id === id)) {
      row.tr.remove();
      rows.delete(id);
    }
  }
  for (const model of models) {
    const row = rows.get(model.id) || serverRow(model.id);
    body.append(row.tr);
    const state = busy.has(model.id) ? row.pending : model.state || 'loaded';
    const loaded = model.state === 'loaded' || model.state === undefined;
    row.tr.dataset.state = model.state || 'loaded';
    const memory = (files.get(model.id) || 0) + (heaps.get(model.id) || 0) + (caches.get(model.id) || 0);
    const cells = {
      task: model.task,
      state,
      memory: loaded && memory > 0 ? mib(memory) : '–',
      idle: !loaded ? '–' : model.pinned ? 'pinned (kept loaded)' : (inflight.get(model.id) || 0) > 0 ? 'in use' : model.expires_at ? duration(Date.parse(model.expires_at) - Date.now()) : 'never',
      inflight: String(inflight.get(model.id) ?? 0),
      queued: String(queued.get(model.id) ?? 0),
      speed: last && last.perModel.get(model.id) != null ? last.perModel.get(model.id).toFixed(1) : '–',
      context: String(model.context_length ?? ''),
      used: ago(model.last_used_at),
    };
    for (const [k, v] of Object.entries(cells)) row.cells[k].textContent = v;
    row.cells.memory.title = loaded ? `files ${mib(files.get(model.id) || 0)} + worker heap ${mib(heaps.get(model.id) || 0)} + prefix cache ${mib(caches.get(model.id) || 0)}` : '';
    if (model.load_error) row.cells.state.title = `Last load failed: ${model.load_error.message}`;
    row.spark.replaceChildren(lineChart([{ values: samples.map((s) => s.perModel.get(model.id) ?? 0), className: 's1' }], `Generated tokens per second of ${model.id}`, 80, 18));
    row.action.hidden = adminOff;
    row.action.disabled = busy.has(model.id) || model.state === 'loading';
    row.action.textContent = busy.has(model.id) ? `${row.pending === 'loading' ? 'Loading' : 'Unloading'}…` : loaded ? 'Unload' : 'Load';
    row.action.setAttribute('aria-label', `${loaded ? 'Unload' : 'Load'} ${model.id}`);
    row.action.dataset.verb = loaded ? 'unload' : 'load';
  }
}

function serverRow(id) {
  const tr = el('tr');
  tr.dataset.model = id;
  const cells = {};
  const th = el('th', '', id);
  th.scope = 'row';
  tr.append(th);
  for (const key of ['task', 'state', 'memory', 'idle', 'inflight', 'queued', 'speed', 'context', 'used']) {
    cells[key] = el('span', key);
    const td = el('td', `cell-${key}`);
    td.append(cells[key]);
    tr.append(td);
  }
  const spark = el('span', 'spark');
  cells.speed.parentElement.prepend(spark);
  const actionCell = el('td');
  const action = el('button', 'model-action', 'Load');
  action.type = 'button';
  actionCell.append(action);
  tr.append(actionCell);
  const row = { tr, cells, spark, action, pending: 'loading' };
  action.addEventListener('click', () => loadOrUnload(id, action.dataset.verb, row));
  rows.set(id, row);
  return row;
}

async function loadOrUnload(id, verb, row) {
  if (busy.has(id)) return;
  busy.add(id);
  row.pending = verb === 'load' ? 'loading' : 'unloading';
  row.action.disabled = true;
  row.action.textContent = verb === 'load' ? 'Loading…' : 'Unloading…';
  row.cells.state.textContent = row.pending;
  const status = $('server-status');
  status.className = 'status';
  status.textContent = `${verb === 'load' ? 'Loading' : 'Unloading'} ${id}…`;
  const started = performance.now();
  try {
    const response = await api(`/models/${verb}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: id }) });
    if (response.status === 404 && !(await response.clone().text()).includes('model_not_found')) {
      adminOff = true;
      throw new Error('this server does not serve the load and unload routes (started with --model-admin false)');
    }
    if (!response.ok) throw new Error(`${response.status}: ${await errorMessage(response)}`);
    const body = await response.json();
    status.textContent = `${body.model} ${body.state} (${((performance.now() - started) / 1000).toFixed(1)} s).`;
  } catch (error) {
    if (error.status === 401) retryAfterKey(poll);
    status.className = 'status error';
    status.textContent = `Could not ${verb} ${id}: ${error.message}`;
  } finally {
    busy.delete(id);
  }
  await poll();
}

export function startPolling() {
  if (pollTimer) return;
  poll();
  pollTimer = setInterval(() => {
    if (!document.hidden) poll();
  }, POLL_MS);
}

/** Leaving the view ends its history: the charts start again when it is opened. */
export function stopPolling() {
  clearInterval(pollTimer);
  pollTimer = null;
  previous = null;
  samples.length = 0;
}
