// The API reference page: reads /openapi.json and lists every path and method with its request body
// and response schemas. Plain DOM with textContent only; nothing from the document is parsed as HTML.
'use strict';

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'options', 'head', 'trace'];

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

/** A $ref into this document's components, resolved (one level; nested refs are shown as written). */
function resolve(doc, schema) {
  if (!schema || typeof schema.$ref !== 'string' || !schema.$ref.startsWith('#/')) return { schema, name: undefined };
  let target = doc;
  for (const part of schema.$ref.slice(2).split('/')) target = target && target[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return { schema: target, name: schema.$ref.split('/').pop() };
}

function schemaBlock(doc, label, schema) {
  const { schema: resolved, name } = resolve(doc, schema);
  const details = el('details');
  details.append(el('summary', name ? `${label}: ${name}` : label));
  details.append(el('pre', JSON.stringify(resolved ?? {}, null, 2)));
  return details;
}

function operationSection(doc, path, method, op) {
  const section = el('section', undefined, 'route');
  section.dataset.search = `${method} ${path} ${op.summary || ''}`.toLowerCase();
  section.id = `${method}-${path}`;
  const title = el('h2');
  title.append(el('span', method.toUpperCase(), 'method'), document.createTextNode(path));
  section.append(title);
  if (op.summary) section.append(el('div', op.summary, 'summary'));
  if (op.description) section.append(el('div', op.description, 'summary'));
  for (const p of op.parameters || []) section.append(el('div', `${p.in} parameter ${p.name}${p.required ? ' (required)' : ''}`, 'summary'));
  const body = op.requestBody && op.requestBody.content;
  if (body) for (const [type, media] of Object.entries(body)) section.append(schemaBlock(doc, `Request body (${type})`, media.schema));
  else section.append(el('div', 'No request body.', 'summary'));
  for (const [status, response] of Object.entries(op.responses || {})) {
    const content = response.content || {};
    const types = Object.keys(content);
    if (types.length === 0) section.append(el('div', `Response ${status}: ${response.description || ''}`, 'summary'));
    for (const type of types) section.append(schemaBlock(doc, `Response ${status} (${type})`, content[type].schema));
  }
  return section;
}

async function main() {
  const list = document.getElementById('routes');
  const toc = document.getElementById('toc');
  const status = document.getElementById('status');
  let doc;
  try {
    const answer = await fetch('/openapi.json', { headers: { accept: 'application/json' } });
    if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
    doc = await answer.json();
  } catch (error) {
    status.textContent = `Could not read /openapi.json: ${error.message}`;
    return;
  }
  status.remove();
  if (doc.info && doc.info.description) list.append(el('p', doc.info.description, 'summary'));
  for (const path of Object.keys(doc.paths || {}).sort()) {
    for (const method of METHODS) {
      const op = doc.paths[path][method];
      if (!op) continue;
      const section = operationSection(doc, path, method, op);
      list.append(section);
      const link = el('a', `${method.toUpperCase()} ${path}`);
      link.href = `#${encodeURIComponent(section.id)}`;
      toc.append(link);
    }
  }
  const filter = document.getElementById('filter');
  filter.addEventListener('input', () => {
    const words = filter.value.trim().toLowerCase();
    for (const section of list.querySelectorAll('section.route')) section.hidden = words !== '' && !section.dataset.search.includes(words);
  });
}

main();
