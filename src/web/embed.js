// The embeddings view: the cosine similarity of every pair of texts, as a heat map.
import { api, errorMessage, retryAfterKey } from './api.js';
import { $, el } from './dom.js';

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
    if (error.status === 401) retryAfterKey(compare);
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
