// The playground: plain JavaScript, no build step, nothing from another host. It talks to this
// server's public routes like any client. Model output is never parsed as HTML: a user's message is
// written as text (textContent), a reply as Markdown built from DOM nodes (markdown.js).
'use strict';

const KEY_STORAGE = 'local-inference-server.api-key';
const $ = (id) => document.getElementById(id);

/** One element, its text set as text. */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// ---------------------------------------------------------------- API key

const apiKey = () => sessionStorage.getItem(KEY_STORAGE) || '';

/** What to do once a key is entered (retry what answered 401). */
let afterKey = null;

/** fetch against this server, with the session's key; a 401 opens the key panel with the server's words. */
async function api(path, init = {}) {
  const headers = new Headers(init.headers || {});
  if (apiKey()) headers.set('authorization', `Bearer ${apiKey()}`);
  const response = await fetch(path, { ...init, headers });
  if (response.status === 401) {
    const message = await errorMessage(response);
    askForKey(`401 Unauthorized: ${message}`);
    const error = new Error(`401 Unauthorized: ${message}`);
    error.status = 401;
    throw error;
  }
  return response;
}

/** The message of an error answer, in any of the server's envelopes. */
async function errorMessage(response) {
  const body = await response.text();
  try {
    const parsed = JSON.parse(body);
    const e = parsed.error;
    if (typeof e === 'string') return e;
    if (e && typeof e.message === 'string') return e.message;
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // not JSON: the raw text below
  }
  return body || response.statusText;
}

function askForKey(message) {
  $('key-message').textContent = apiKey() ? `${message} (the key given was refused)` : message;
  $('key-panel').hidden = false;
  $('key-input').focus();
}

$('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = $('key-input').value.trim();
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
  $('key-input').value = '';
  $('key-panel').hidden = true;
  const retry = afterKey || loadModels;
  afterKey = null;
  retry();
});

// ---------------------------------------------------------------- tabs

const TABS = ['chat', 'embed', 'rerank', 'server'];
function showTab(name) {
  for (const tab of TABS) {
    $(`tab-${tab}`).setAttribute('aria-selected', String(tab === name));
    $(`view-${tab}`).hidden = tab !== name;
  }
  if (name === 'server') startPolling();
  else stopPolling();
}
for (const tab of TABS) $(`tab-${tab}`).addEventListener('click', () => showTab(tab));

// ---------------------------------------------------------------- models

let models = [];

async function loadModels() {
  try {
    const response = await api('/v1/models');
    if (!response.ok) throw new Error(`${response.status}: ${await errorMessage(response)}`);
    models = (await response.json()).data || [];
  } catch (error) {
    if (error.status === 401) afterKey = loadModels;
    $('chat-model-info').textContent = `Could not list the models: ${error.message}`;
    return;
  }
  showModels();
}

/** The model pickers from `models` (a choice already made is kept). */
function showModels() {
  fill($('chat-model'), models.filter((m) => m.task === 'chat'));
  fill($('embed-model'), models.filter((m) => m.task === 'embedding' || m.task === 'embed'));
  // Rerank models (cross-encoders) first, then embedding models (which rank by cosine).
  fill($('rerank-model'), [...models.filter((m) => m.task === 'rerank'), ...models.filter((m) => m.task === 'embedding' || m.task === 'embed')]);
  describeChatModel();
}

function fill(select, list) {
  const previous = select.value;
  select.replaceChildren(...list.map((m) => {
    const option = el('option', '', m.id);
    option.value = m.id;
    return option;
  }));
  if (list.some((m) => m.id === previous)) select.value = previous;
  select.disabled = list.length === 0;
}

function describeChatModel() {
  const model = models.find((m) => m.id === $('chat-model').value);
  if (!model) {
    $('chat-model-info').textContent = 'No chat model is served.';
    return;
  }
  const state = model.state ? (model.state === 'loaded' ? 'loaded' : `${model.state}: loads on first use, which takes a moment`) : '';
  $('chat-model-info').textContent = [`context ${model.context_length} tokens`, state].filter(Boolean).join(' · ');
  const thinks = Boolean(model.capabilities && model.capabilities.thinking && model.capabilities.thinking.supported);
  $('thinking').disabled = !thinks;
  if (!thinks) $('thinking').checked = false;
  if (model.max_tokens && Number($('max-tokens').value) > model.max_tokens) $('max-tokens').value = String(model.max_tokens);
}
$('chat-model').addEventListener('change', describeChatModel);


// ---------------------------------------------------------------- server view

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
    models = (await modelsResponse.json()).data || [];
    showModels();
    record(metrics);
    drawServer(metrics);
    $('server-updated').textContent = `Updated ${new Date().toLocaleTimeString()}.`;
    $('server-updated').className = 'status';
  } catch (error) {
    // Asked for a key: no more polls (each would ask again) until one is given.
    if (error.status === 401) {
      stopPolling();
      afterKey = () => {
        loadModels();
        if (!$('view-server').hidden) startPolling();
      };
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
    if (error.status === 401) afterKey = poll;
    status.className = 'status error';
    status.textContent = `Could not ${verb} ${id}: ${error.message}`;
  } finally {
    busy.delete(id);
  }
  await poll();
}

function startPolling() {
  if (pollTimer) return;
  poll();
  pollTimer = setInterval(() => {
    if (!document.hidden) poll();
  }, POLL_MS);
}

/** Leaving the view ends its history: the charts start again when it is opened. */
function stopPolling() {
  clearInterval(pollTimer);
  pollTimer = null;
  previous = null;
  samples.length = 0;
}

// ---------------------------------------------------------------- chat

/**
 * Conversations are kept in this browser (localStorage), several of them: each a list of entries
 * {role, text, thinking?, stats?, failed?, excluded?}, drawn again as they were after a reload.
 * `excluded`: a user message whose turn failed before any text; it is shown but not sent again.
 */
const CONVERSATIONS_STORAGE = 'local-inference-server.conversations';
/** Where the first version of the page kept its one conversation: read once, then moved. */
const OLD_CONVERSATION_STORAGE = 'local-inference-server.conversation';

/** Every conversation: {id, updated, entries}; `current` is the one shown. */
let conversations = [];
let current = null;

const newConversation = () => ({ id: `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`, updated: Date.now(), entries: [] });

function saveConversations() {
  try {
    // An empty conversation is not listed (a new one is made again after a reload).
    const kept = conversations.filter((c) => c.entries.length > 0);
    localStorage.setItem(CONVERSATIONS_STORAGE, JSON.stringify({ version: 1, current: current.id, conversations: kept }));
  } catch {
    // storage full or disabled: the conversations stay in the page only
  }
}

/** Entries read back from storage, keeping only what the page wrote (strings where strings were). */
function validEntries(list) {
  if (!Array.isArray(list)) return [];
  return list
    .filter((e) => e && (e.role === 'user' || e.role === 'assistant') && typeof e.text === 'string')
    .map((e) => ({
      role: e.role,
      text: e.text,
      ...(typeof e.thinking === 'string' ? { thinking: e.thinking } : {}),
      ...(typeof e.stats === 'string' ? { stats: e.stats } : {}),
      ...(e.failed === true ? { failed: true } : {}),
      ...(e.excluded === true ? { excluded: true } : {}),
    }));
}

function readStorage(key) {
  try {
    return JSON.parse(localStorage.getItem(key) || 'null');
  } catch {
    return null;
  }
}

function restoreConversations() {
  const saved = readStorage(CONVERSATIONS_STORAGE);
  if (saved && Array.isArray(saved.conversations)) {
    conversations = saved.conversations
      .filter((c) => c && typeof c.id === 'string')
      .map((c) => ({ id: c.id, updated: Number(c.updated) || 0, entries: validEntries(c.entries) }))
      .filter((c) => c.entries.length > 0);
  }
  const old = readStorage(OLD_CONVERSATION_STORAGE);
  if (old && Array.isArray(old.shown)) {
    const entries = validEntries(old.shown);
    // That version dropped a failed turn's message from what it sent: the same, by `excluded`.
    entries.forEach((e, i) => {
      if (e.role === 'assistant' && e.failed && e.text === '' && entries[i - 1]?.role === 'user') entries[i - 1].excluded = true;
    });
    if (entries.length > 0) conversations.push({ ...newConversation(), entries });
    localStorage.removeItem(OLD_CONVERSATION_STORAGE);
  }
  current = conversations.find((c) => saved && c.id === saved.current) || null;
  if (!current) {
    current = newConversation();
    conversations.push(current);
  }
  drawConversation();
  drawConversationList();
}

/** What a conversation sends: its messages, less failed turns and empty replies. */
const messagesOf = (conversation) =>
  conversation.entries.filter((e) => !e.excluded && (e.role === 'user' || e.text !== '')).map((e) => ({ role: e.role, content: e.text }));

/** A conversation's name in the list: its first message, cut short. */
function titleOf(conversation) {
  const first = conversation.entries.find((e) => e.role === 'user');
  const line = first ? first.text.trim().split('\n')[0] : '';
  if (!line) return 'New conversation';
  return line.length > 48 ? `${line.slice(0, 47)}…` : line;
}

function drawConversationList() {
  const list = $('conversations');
  const shown = [...conversations].filter((c) => c.entries.length > 0 || c === current).sort((a, b) => b.updated - a.updated);
  list.replaceChildren(...shown.map((c) => {
    const li = el('li', c === current ? 'conversation current' : 'conversation');
    const open = el('button', 'conversation-open', titleOf(c));
    open.type = 'button';
    open.title = `${titleOf(c)} (${new Date(c.updated).toLocaleString()})`;
    if (c === current) open.setAttribute('aria-current', 'true');
    open.addEventListener('click', () => switchTo(c));
    const remove = el('button', 'conversation-delete', '×');
    remove.type = 'button';
    remove.title = 'Delete this conversation';
    remove.setAttribute('aria-label', `Delete the conversation “${titleOf(c)}”`);
    remove.addEventListener('click', () => deleteConversation(c));
    li.append(open, remove);
    return li;
  }));
}

function switchTo(conversation) {
  if (conversation === current) return;
  stop();
  // An empty conversation left behind is dropped.
  if (current.entries.length === 0) conversations = conversations.filter((c) => c !== current);
  current = conversation;
  saveConversations();
  drawConversation();
  drawConversationList();
}

function deleteConversation(conversation) {
  if (conversation === current) stop();
  conversations = conversations.filter((c) => c !== conversation);
  if (conversation === current) {
    current = [...conversations].sort((a, b) => b.updated - a.updated)[0] || null;
    if (!current) {
      current = newConversation();
      conversations.push(current);
    }
    drawConversation();
  }
  saveConversations();
  drawConversationList();
}

$('clear').addEventListener('click', () => {
  stop();
  if (current.entries.length > 0) {
    current = newConversation();
    conversations.push(current);
  }
  saveConversations();
  drawConversation();
  drawConversationList();
  $('prompt').focus();
});

// ------------------------------------------------ drawing the log

/** The request streaming now: its AbortController. */
let running = null;

/** Draws the current conversation's entries from scratch. */
function drawConversation() {
  $('log').replaceChildren();
  current.entries.forEach((entry, index) => {
    const view = addMessage(entry.role, entry.text);
    view.item.dataset.index = String(index);
    if (typeof entry.thinking === 'string') thinkingOf(view).textContent = entry.thinking;
    if (typeof entry.stats === 'string') addStats(view, entry.stats, entry.failed === true);
  });
  drawActions();
}

/** A message in the log: a user's as text, a reply's as Markdown (built from DOM nodes, never HTML). */
function addMessage(role, text) {
  const item = el('li', `msg ${role}`);
  const body = el('div', 'text');
  item.append(body);
  const view = { item, body, role };
  setText(view, text);
  $('log').append(item);
  item.scrollIntoView({ block: 'end' });
  return view;
}

function setText(view, text) {
  if (view.role === 'assistant') view.body.replaceChildren(Markdown.render(text));
  else view.body.textContent = text;
}

/** The folded thinking block of a reply, made on first use. */
function thinkingOf(view) {
  if (!view.thinking) {
    const details = el('details');
    details.append(el('summary', '', 'Thinking'));
    view.thinking = el('div', 'thinking');
    details.append(view.thinking);
    view.item.insertBefore(details, view.body);
  }
  return view.thinking;
}

function addStats(view, text, failed) {
  view.item.append(el('div', failed ? 'stats error' : 'stats', text));
}

function button(className, text, label, onClick) {
  const b = el('button', className, text);
  b.type = 'button';
  if (label) b.setAttribute('aria-label', label);
  b.addEventListener('click', onClick);
  b.disabled = running !== null;
  return b;
}

/** Edit under each of the user's messages; Regenerate under the last reply. */
function drawActions() {
  for (const old of $('log').querySelectorAll('.msg-actions')) old.remove();
  const items = [...$('log').children];
  items.forEach((item) => {
    const index = Number(item.dataset.index);
    const entry = current.entries[index];
    if (!entry) return;
    const actions = el('div', 'msg-actions');
    if (entry.role === 'user') actions.append(button('edit', 'Edit', 'Edit this message and send it again', () => startEdit(item, index)));
    else if (index === current.entries.length - 1) actions.append(button('regenerate', 'Regenerate', 'Answer the last message again', regenerate));
    if (actions.childElementCount > 0) item.append(actions);
  });
}

function setRunning(controller) {
  running = controller;
  $('send').disabled = controller !== null;
  $('stop').disabled = controller === null;
  for (const b of $('log').querySelectorAll('.msg-actions button, .edit-form button')) b.disabled = controller !== null;
}

/** Replaces a user message's text with a box to edit it: sending drops what followed and asks again. */
function startEdit(item, index) {
  if (running) return;
  const entry = current.entries[index];
  const form = el('form', 'edit-form');
  const area = el('textarea');
  area.value = entry.text;
  area.rows = Math.min(10, Math.max(2, entry.text.split('\n').length));
  area.setAttribute('aria-label', 'Edited message');
  const send = el('button', 'edit-send', 'Send');
  send.type = 'submit';
  const cancel = button('edit-cancel', 'Cancel', '', () => drawConversation());
  const row = el('div', 'buttons');
  row.append(send, cancel);
  form.append(area, row);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (area.value.trim() === '' || running) return;
    current.entries = current.entries.slice(0, index);
    current.entries.push({ role: 'user', text: area.value });
    drawConversation();
    runTurn(current);
  });
  area.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    } else if (event.key === 'Escape') {
      event.stopPropagation();
      drawConversation();
    }
  });
  item.querySelector('.text').replaceWith(form);
  item.querySelector('.msg-actions')?.remove();
  area.focus();
}

/** The last reply again: it is dropped and the conversation up to it sent again. */
function regenerate() {
  if (running) return;
  const last = current.entries.at(-1);
  if (!last || last.role !== 'assistant') return;
  current.entries.pop();
  const user = current.entries.at(-1);
  if (user) delete user.excluded;
  drawConversation();
  runTurn(current);
}

// ------------------------------------------------ sending

/**
 * Server-sent events from a fetch body: calls onData with each event's data (the lines joined), as
 * the SSE specification reads them; comments (pings) are skipped.
 */
async function readEvents(body, onData) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = raw.split(/\r?\n/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).replace(/^ /, '')).join('\n');
      if (data !== '' && onData(data) === false) {
        await reader.cancel();
        return;
      }
    }
  }
}

function send() {
  if (running) return;
  const text = $('prompt').value;
  if (text.trim() === '' || !$('chat-model').value) return;
  $('prompt').value = '';
  const conversation = current;
  conversation.entries.push({ role: 'user', text });
  const view = addMessage('user', text);
  view.item.dataset.index = String(conversation.entries.length - 1);
  runTurn(conversation);
}

/** How often a streaming reply's Markdown is drawn again (each draw parses the whole reply). */
const REDRAW_MS = 50;

/** Streams the reply to a conversation whose last entry is the user's message. */
async function runTurn(conversation) {
  const model = $('chat-model').value;
  if (!model || running) return;
  const userEntry = conversation.entries.at(-1);
  const messagesSoFar = messagesOf(conversation);
  const entry = { role: 'assistant', text: '' };
  conversation.entries.push(entry);
  conversation.updated = Date.now();
  const reply = addMessage('assistant', '');
  reply.item.dataset.index = String(conversation.entries.length - 1);
  for (const old of $('log').querySelectorAll('.msg-actions')) old.remove();
  const controller = new AbortController();
  setRunning(controller);
  drawConversationList();

  const system = $('system').value.trim();
  const messages = [...(system ? [{ role: 'system', content: system }] : []), ...messagesSoFar];
  const stops = $('stop-sequences').value.split('\n').filter((line) => line !== '').slice(0, 4);
  const body = {
    model,
    messages,
    temperature: Number($('temperature').value),
    max_tokens: Number($('max-tokens').value),
    top_p: Number($('top-p').value),
    ...(stops.length > 0 ? { stop: stops } : {}),
    // The OpenAI dialect's thinking switch (off when absent, as with none).
    ...($('thinking').checked ? { reasoning_effort: 'medium' } : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
  const started = performance.now();
  let firstAt = null;
  let lastAt = null;
  let usage = null;
  let content = '';
  let thought = '';
  let finish = null;
  let failure = null;
  let redraw = null;
  const drawSoon = () => {
    redraw ??= setTimeout(() => {
      redraw = null;
      setText(reply, content);
    }, REDRAW_MS);
  };
  try {
    const response = await api('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (!response.ok) throw new Error(`${response.status}: ${await errorMessage(response)}`);
    await readEvents(response.body, (data) => {
      if (data === '[DONE]') return false;
      const chunk = JSON.parse(data);
      if (chunk.error) {
        failure = chunk.error.message || JSON.stringify(chunk.error);
        return false;
      }
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices && chunk.choices[0];
      if (!choice) return true;
      if (choice.finish_reason) finish = choice.finish_reason;
      const delta = choice.delta || {};
      const piece = (delta.content || '') + (delta.reasoning_content || '');
      if (piece !== '') {
        const now = performance.now();
        if (firstAt === null) firstAt = now;
        lastAt = now;
      }
      if (delta.reasoning_content) {
        thought += delta.reasoning_content;
        thinkingOf(reply).textContent = thought;
      }
      if (delta.content) {
        content += delta.content;
        drawSoon();
      }
      return true;
    });
  } catch (error) {
    if (error.name === 'AbortError') finish = 'stopped';
    else {
      failure = error.message;
      if (error.status === 401) afterKey = null;
    }
  } finally {
    clearTimeout(redraw);
    setRunning(null);
  }
  setText(reply, content);
  const line = failure ? `Error: ${failure}` : describeStats({ usage, started, firstAt, lastAt, finish });
  addStats(reply, line, Boolean(failure));
  Object.assign(entry, { text: content, ...(thought !== '' ? { thinking: thought } : {}), stats: line, ...(failure ? { failed: true } : {}) });
  // A turn that failed before any text: its message stays on screen but is not sent again.
  if (content === '' && failure && userEntry) userEntry.excluded = true;
  conversation.updated = Date.now();
  saveConversations();
  if (conversation === current) {
    drawActions();
    reply.item.scrollIntoView({ block: 'end' });
  }
  drawConversationList();
}

/**
 * The line under a reply. Tokens are the server's (its usage chunk); time to first token is from
 * sending the request to the first streamed text, tokens per second the completion tokens after the
 * first over the time between the first and the last streamed text (as llama-server's page does).
 */
function describeStats({ usage, started, firstAt, lastAt, finish }) {
  const parts = [];
  if (usage) {
    const cached = usage.prompt_tokens_details ? usage.prompt_tokens_details.cached_tokens : 0;
    parts.push(`prompt ${usage.prompt_tokens} tokens (${cached} cached)`, `completion ${usage.completion_tokens} tokens`);
  }
  if (firstAt !== null) parts.push(`first token ${Math.round(firstAt - started)} ms`);
  if (usage && firstAt !== null && lastAt > firstAt && usage.completion_tokens > 1) {
    parts.push(`${((usage.completion_tokens - 1) / ((lastAt - firstAt) / 1000)).toFixed(1)} tokens/s`);
  }
  if (finish) parts.push(finish === 'stopped' ? 'stopped' : `finish: ${finish}`);
  return parts.join(' · ');
}

function stop() {
  if (running) running.abort();
}

$('chat-form').addEventListener('submit', (event) => {
  event.preventDefault();
  send();
});
$('stop').addEventListener('click', stop);
$('prompt').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape') stop();
});

// ---------------------------------------------------------------- embeddings

const cosine = (a, b) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
};

/** -1 blue, 0 white, 1 red: a diverging scale that reads the same in both themes. */
function heat(value) {
  const v = Math.max(-1, Math.min(1, value));
  const lightness = 100 - Math.abs(v) * 45;
  return `hsl(${v >= 0 ? 8 : 215}, 80%, ${lightness}%)`;
}

async function tokenCount(model, text) {
  try {
    const response = await api('/tokenize', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, prompt: text }) });
    if (!response.ok) return null;
    const body = await response.json();
    return typeof body.count === 'number' ? body.count : null;
  } catch {
    return null;
  }
}

async function compare() {
  const texts = $('texts').value.split('\n').map((t) => t.trim()).filter((t) => t !== '');
  const model = $('embed-model').value;
  const status = $('embed-status');
  if (texts.length === 0 || !model) {
    status.textContent = model ? 'Enter at least one text.' : 'No embedding model is served.';
    return;
  }
  status.className = 'status';
  status.textContent = 'Embedding…';
  let vectors;
  let usage;
  try {
    const response = await api('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, input: texts }) });
    if (!response.ok) throw new Error(`${response.status}: ${await errorMessage(response)}`);
    const body = await response.json();
    vectors = body.data.sort((a, b) => a.index - b.index).map((d) => d.embedding);
    usage = body.usage;
  } catch (error) {
    if (error.status === 401) afterKey = compare;
    status.className = 'status error';
    status.textContent = `Error: ${error.message}`;
    return;
  }
  const counts = await Promise.all(texts.map((t) => tokenCount(model, t)));
  const table = $('heatmap');
  const head = el('tr');
  head.append(el('th', '', ''));
  head.append(el('th', '', 'Tokens'));
  texts.forEach((_, j) => head.append(el('th', '', `#${j + 1}`)));
  const rows = texts.map((text, i) => {
    const tr = el('tr');
    const th = el('th', '', `#${i + 1} ${text}`);
    th.title = text;
    tr.append(th, el('td', 'tokens', counts[i] === null ? '–' : String(counts[i])));
    texts.forEach((__, j) => {
      const value = cosine(vectors[i], vectors[j]);
      const td = el('td', 'cell', value.toFixed(2));
      td.title = `cos(#${i + 1}, #${j + 1}) = ${value.toFixed(6)}`;
      td.dataset.cos = String(value);
      td.style.backgroundColor = heat(value);
      tr.append(td);
    });
    return tr;
  });
  table.replaceChildren(head, ...rows);
  status.textContent = `${texts.length} texts, ${vectors[0].length} dimensions${usage ? `, ${usage.prompt_tokens} tokens in all` : ''}. Cosine similarity; hover a cell for the exact value.`;
}

$('embed-form').addEventListener('submit', (event) => {
  event.preventDefault();
  compare();
});
$('texts').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    compare();
  }
});

// ---------------------------------------------------------------- rerank

async function rank() {
  const query = $('rerank-query').value.trim();
  const documents = $('rerank-documents').value.split('\n').map((t) => t.trim()).filter((t) => t !== '');
  const model = $('rerank-model').value;
  const status = $('rerank-status');
  status.className = 'status';
  if (!model) {
    status.textContent = 'No rerank or embedding model is served.';
    return;
  }
  if (query === '' || documents.length === 0) {
    status.textContent = 'Enter a query and at least one document.';
    return;
  }
  status.textContent = 'Ranking…';
  let body;
  try {
    const response = await api('/v1/rerank', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, query, documents, top_n: documents.length, return_documents: true }),
    });
    if (!response.ok) throw new Error(`${response.status}: ${await errorMessage(response)}`);
    body = await response.json();
  } catch (error) {
    if (error.status === 401) afterKey = rank;
    status.className = 'status error';
    status.textContent = `Error: ${error.message}`;
    return;
  }
  const results = Array.isArray(body.results) ? body.results : [];
  const items = results.map((r, position) => {
    const score = Number(r.relevance_score);
    const text = r.document && typeof r.document.text === 'string' ? r.document.text : documents[r.index] ?? '';
    const li = el('li', 'rerank-result');
    li.dataset.index = String(r.index);
    li.dataset.score = String(score);
    const head = el('div', 'rerank-head');
    head.append(el('span', 'rerank-rank', `${position + 1}.`), el('span', 'rerank-text', text), el('span', 'rerank-doc', `#${r.index + 1}`));
    const bar = el('div', 'bar');
    const fill = el('div', 'bar-fill');
    // Scores are in [0, 1] (a sigmoid of the logit, or (1 + cos) / 2): the bar is the score's share of 1.
    fill.style.width = `${Math.max(0, Math.min(1, score)) * 100}%`;
    bar.append(fill);
    const exact = el('span', 'rerank-score', Number.isFinite(score) ? score.toFixed(6) : String(r.relevance_score));
    exact.title = `relevance_score = ${r.relevance_score}`;
    const line = el('div', 'rerank-line');
    line.append(bar, exact);
    li.append(head, line);
    return li;
  });
  $('rerank-results').replaceChildren(...items);
  const tokens = body.usage && typeof body.usage.total_tokens === 'number' ? body.usage.total_tokens : null;
  status.textContent = `${results.length} documents ranked by ${body.model || model}${tokens === null ? '' : `, ${tokens} tokens in all`}. Best first; the bar is the score (0 to 1).`;
}

$('rerank-form').addEventListener('submit', (event) => {
  event.preventDefault();
  rank();
});
for (const id of ['rerank-documents', 'rerank-query']) {
  $(id).addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      rank();
    }
  });
}

restoreConversations();
loadModels();
