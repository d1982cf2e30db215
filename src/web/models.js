// The models the server lists (GET /v1/models), and the pickers of each view filled from them.
import { api, errorMessage, retryAfterKey } from './api.js';
import { $, el } from './dom.js';

/** The last list read (by this module or by the server view's polls). */
export let models = [];

/** Takes a list read elsewhere (the server view polls /v1/models) and fills the pickers from it. */
export function setModels(list) {
  models = list;
  showModels();
}

export async function loadModels() {
  try {
    const response = await api('/v1/models');
    if (!response.ok) throw new Error(`${response.status}: ${await errorMessage(response)}`);
    models = (await response.json()).data || [];
  } catch (error) {
    if (error.status === 401) retryAfterKey(loadModels);
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
    offerImages(null);
    return;
  }
  const state = model.state ? (model.state === 'loaded' ? 'loaded' : `${model.state}: loads on first use, which takes a moment`) : '';
  $('chat-model-info').textContent = [`context ${model.context_length} tokens`, state].filter(Boolean).join(' · ');
  const thinks = Boolean(model.capabilities && model.capabilities.thinking && model.capabilities.thinking.supported);
  $('thinking').disabled = !thinks;
  if (!thinks) $('thinking').checked = false;
  if (model.max_tokens && Number($('max-tokens').value) > model.max_tokens) $('max-tokens').value = String(model.max_tokens);
  offerImages(model);
}

/** The attach control, for a model whose capabilities say it takes images; else disabled, with why. */
function offerImages(model) {
  const sees = Boolean(model && model.capabilities && model.capabilities.image_input && model.capabilities.image_input.supported);
  $('attach').disabled = !sees;
  $('attach-button').disabled = !sees;
  const why = !model ? 'No chat model is served.'
    : sees ? 'Takes images: PNG, JPEG, WebP or GIF (its first frame), by Image… beside Send.'
    : `Takes no images (a text-only ${model.engine} model): Image… is off.`;
  $('attach-button').title = why;
  $('attach-info').textContent = model ? why : '';
}
$('chat-model').addEventListener('change', describeChatModel);

