// The playground: plain JavaScript, no build step, nothing from another host. It talks to this
// server's public routes like any client. Model output is never parsed as HTML: a user's message is
// written as text (textContent), a reply as Markdown built from DOM nodes (markdown.js).
//
// Native ES modules (no build step), each view's state its own: api.js (the key and requests),
// models.js (the pickers), server-view.js, chat.js (with conversations.js and sse.js), embed.js,
// rerank.js; dom.js holds the two DOM helpers. This module wires the tabs and starts the page.
import { onKeyEntered } from './api.js';
import { restoreConversations } from './chat.js';
import { $ } from './dom.js';
import './embed.js';
import { loadModels } from './models.js';
import './rerank.js';
import { startPolling, stopPolling } from './server-view.js';

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

onKeyEntered(loadModels);
restoreConversations();
loadModels();
