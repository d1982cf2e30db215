// The playground: plain JavaScript, no build step, nothing from another host. It talks to this
// server's public routes like any client. Model output is only ever written as text (textContent),
// never parsed as HTML.
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

const TABS = ['chat', 'embed', 'models'];
function showTab(name) {
  for (const tab of TABS) {
    $(`tab-${tab}`).setAttribute('aria-selected', String(tab === name));
    $(`view-${tab}`).hidden = tab !== name;
  }
  if (name === 'models') renderModels();
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
  fill($('chat-model'), models.filter((m) => m.task === 'chat'));
  fill($('embed-model'), models.filter((m) => m.task === 'embedding' || m.task === 'embed'));
  describeChatModel();
  renderModels();
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

function renderModels() {
  const table = $('models-table');
  const head = el('tr');
  for (const h of ['Model', 'Task', 'State', 'Context', 'Files', 'Last used']) head.append(el('th', '', h));
  const rows = models.map((m) => {
    const tr = el('tr');
    const files = typeof m.file_bytes === 'number' ? `${(m.file_bytes / 1048576).toFixed(1)} MiB` : '';
    for (const v of [m.id, m.task, m.state || '', String(m.context_length ?? ''), files, m.last_used_at || '']) tr.append(el('td', '', v));
    return tr;
  });
  table.replaceChildren(head, ...rows);
}
$('refresh-models').addEventListener('click', loadModels);

// ---------------------------------------------------------------- chat

/** The conversation so far, as chat completions messages (the system prompt is added per request). */
let history = [];
/** What the log shows, to draw it again after a reload: {role, text, thinking?, stats?, failed?}. */
let shown = [];
/** The current conversation is kept in this browser (localStorage) until "New conversation". */
const CONVERSATION_STORAGE = 'local-inference-server.conversation';

function saveConversation() {
  try {
    localStorage.setItem(CONVERSATION_STORAGE, JSON.stringify({ history, shown }));
  } catch {
    // storage full or disabled: the conversation stays in the page only
  }
}

function restoreConversation() {
  let saved;
  try {
    saved = JSON.parse(localStorage.getItem(CONVERSATION_STORAGE) || 'null');
  } catch {
    saved = null;
  }
  if (!saved || !Array.isArray(saved.history) || !Array.isArray(saved.shown)) return;
  history = saved.history.filter((m) => m && (m.role === 'user' || m.role === 'assistant') && typeof m.content === 'string');
  shown = saved.shown.filter((e) => e && typeof e.text === 'string');
  for (const entry of shown) {
    const message = addMessage(entry.role === 'user' ? 'user' : 'assistant', entry.text);
    if (typeof entry.thinking === 'string') thinkingOf(message).textContent = entry.thinking;
    if (typeof entry.stats === 'string') addStats(message, entry.stats, entry.failed === true);
  }
}

/** The folded thinking block of a reply, made on first use. */
function thinkingOf(message) {
  if (!message.thinking) {
    const details = el('details');
    details.append(el('summary', '', 'Thinking'));
    message.thinking = el('div', 'thinking');
    details.append(message.thinking);
    message.item.insertBefore(details, message.body);
  }
  return message.thinking;
}

function addStats(message, text, failed) {
  message.item.append(el('div', failed ? 'stats error' : 'stats', text));
}
/** The request streaming now: its AbortController. */
let running = null;

function addMessage(role, text) {
  const item = el('li', `msg ${role}`);
  const body = el('div', 'text', text);
  item.append(body);
  $('log').append(item);
  item.scrollIntoView({ block: 'end' });
  return { item, body };
}

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

async function send() {
  if (running) return;
  const text = $('prompt').value;
  const model = $('chat-model').value;
  if (text.trim() === '' || !model) return;
  $('prompt').value = '';
  history.push({ role: 'user', content: text });
  shown.push({ role: 'user', text });
  addMessage('user', text);
  const reply = addMessage('assistant', '');
  const controller = new AbortController();
  running = controller;
  $('send').disabled = true;
  $('stop').disabled = false;

  const system = $('system').value.trim();
  const messages = [...(system ? [{ role: 'system', content: system }] : []), ...history];
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
        reply.body.textContent = content;
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
    running = null;
    $('send').disabled = false;
    $('stop').disabled = true;
  }
  if (content !== '') history.push({ role: 'assistant', content });
  else if (failure) history.pop();
  const line = failure ? `Error: ${failure}` : describeStats({ usage, started, firstAt, lastAt, finish });
  addStats(reply, line, Boolean(failure));
  shown.push({ role: 'assistant', text: content, ...(thought !== '' ? { thinking: thought } : {}), stats: line, failed: Boolean(failure) });
  saveConversation();
  reply.item.scrollIntoView({ block: 'end' });
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
  const line = parts.join(' · ');
  return line;
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
$('clear').addEventListener('click', () => {
  stop();
  history = [];
  shown = [];
  localStorage.removeItem(CONVERSATION_STORAGE);
  $('log').replaceChildren();
  $('prompt').focus();
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

restoreConversation();
loadModels();
