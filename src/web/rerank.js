// The rerank view: documents ranked against a query (POST /v1/rerank), best first, each with its score.
import { api, errorMessage, retryAfterKey } from './api.js';
import { $, el } from './dom.js';

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
    if (error.status === 401) retryAfterKey(rank);
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
