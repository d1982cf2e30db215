// The chat view: the conversation list, the log (a user's message as text with its images as
// thumbnails, a reply as Markdown built from DOM nodes by markdown.js, a classic script that defines
// the global Markdown), attaching images, editing, regenerating, and streaming a turn from
// /v1/chat/completions.
import { api, errorMessage, retryAfterKey } from './api.js';
import { messagesOf, newConversation, readConversations, saveConversations as store, titleOf } from './conversations.js';
import { $, el } from './dom.js';
import { readEvents } from './sse.js';

/** Every conversation: {id, updated, entries}; `current` is the one shown. */
let conversations = [];
let current = null;

const saveConversations = () => store(conversations, current);

/** Reads the conversations kept in this browser and shows the last one. */
export function restoreConversations() {
  ({ conversations, current } = readConversations());
  drawConversation();
  drawConversationList();
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
    const view = addMessage(entry.role, entry.text, entry.images);
    view.item.dataset.index = String(index);
    if (typeof entry.thinking === 'string') thinkingOf(view).textContent = entry.thinking;
    if (typeof entry.stats === 'string') addStats(view, entry.stats, entry.failed === true);
  });
  drawActions();
}

/** A message in the log: a user's as text (its images as thumbnails above it), a reply's as Markdown (built from DOM nodes, never HTML). */
function addMessage(role, text, images) {
  const item = el('li', `msg ${role}`);
  if (images && images.length > 0) item.append(thumbnails(images));
  const body = el('div', 'text');
  item.append(body);
  const view = { item, body, role };
  setText(view, text);
  $('log').append(item);
  item.scrollIntoView({ block: 'end' });
  return view;
}

/** A user message's images, each as a thumbnail of the data URL sent (an img's src, never markup). */
function thumbnails(images) {
  const row = el('div', 'images');
  images.forEach((url, i) => row.append(thumbnail(url, `Image ${i + 1} of ${images.length}`)));
  return row;
}

function thumbnail(url, alt) {
  const img = el('img', 'thumb');
  img.alt = alt;
  img.src = url;
  return img;
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
    if ((area.value.trim() === '' && !entry.images) || running) return;
    current.entries = current.entries.slice(0, index);
    // The edited message keeps its images.
    current.entries.push({ role: 'user', text: area.value, ...(entry.images ? { images: entry.images } : {}) });
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

function send() {
  if (running) return;
  const text = $('prompt').value;
  if ((text.trim() === '' && attached.length === 0) || !$('chat-model').value) return;
  $('prompt').value = '';
  const images = attached.map((a) => a.url);
  attached = [];
  drawAttached();
  const conversation = current;
  conversation.entries.push({ role: 'user', text, ...(images.length > 0 ? { images } : {}) });
  const view = addMessage('user', text, images);
  view.item.dataset.index = String(conversation.entries.length - 1);
  runTurn(conversation);
}

// ------------------------------------------------ attaching images

/**
 * The images to send with the next message: {url (a data URL, as read from the file), name}. They
 * are sent as they are: the server checks each (its type from its bytes, its size from its header)
 * and its answer, a refusal included, shows under the reply.
 */
let attached = [];

/** The images waiting to be sent, each with a button that removes it. */
function drawAttached() {
  $('attachments').replaceChildren(...attached.map((a, i) => {
    const li = el('li', 'attachment');
    const remove = el('button', 'attachment-remove', '×');
    remove.type = 'button';
    remove.title = `Remove ${a.name}`;
    remove.setAttribute('aria-label', `Remove the image ${a.name}`);
    remove.addEventListener('click', () => {
      attached.splice(i, 1);
      drawAttached();
    });
    li.append(thumbnail(a.url, a.name), remove);
    return li;
  }));
}

const readAsDataUrl = (file) => new Promise((resolve, reject) => {
  const reader = new FileReader();
  reader.onload = () => resolve(reader.result);
  reader.onerror = () => reject(reader.error);
  reader.readAsDataURL(file);
});

$('attach-button').addEventListener('click', () => $('attach').click());
$('attach').addEventListener('change', async () => {
  const files = [...$('attach').files];
  // Emptied, so that choosing the same file again is a change too.
  $('attach').value = '';
  for (const file of files) {
    try {
      attached.push({ url: await readAsDataUrl(file), name: file.name });
    } catch (error) {
      $('attach-info').textContent = `Could not read ${file.name}: ${error.message}`;
    }
  }
  drawAttached();
  $('prompt').focus();
});

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
      if (error.status === 401) retryAfterKey(null);
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
