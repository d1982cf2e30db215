// The API reference page: reads /openapi.json and lists every path and method with its request body
// and response schemas (references inlined). Plain DOM with textContent only; nothing from the document is parsed as HTML.
'use strict';

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'options', 'head', 'trace'];

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

/** The value a local reference (`#/components/…`) points at in this document. */
function lookup(doc, ref) {
  let target = doc;
  for (const part of ref.slice(2).split('/')) target = target && target[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return target;
}

/**
 * The schema with every local $ref replaced by what it points at (its sibling keywords kept), so an
 * `anyOf` of references or a nested definition shows its fields; a reference to a schema it is
 * already inside (a recursive one) is left as written.
 */
function inline(doc, schema, seen) {
  if (Array.isArray(schema)) return schema.map((item) => inline(doc, item, seen));
  if (!schema || typeof schema !== 'object') return schema;
  if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#/') && !seen.includes(schema.$ref)) {
    const { $ref, ...siblings } = schema;
    const target = lookup(doc, $ref);
    if (target && typeof target === 'object') return { ...inline(doc, target, [...seen, $ref]), ...inline(doc, siblings, seen) };
  }
  const out = {};
  for (const [key, value] of Object.entries(schema)) out[key] = inline(doc, value, seen);
  return out;
}

function schemaBlock(doc, label, schema) {
  const name = schema && typeof schema.$ref === 'string' ? schema.$ref.split('/').pop() : undefined;
  const details = el('details');
  details.append(el('summary', name ? `${label}: ${name}` : label));
  details.append(el('pre', JSON.stringify(inline(doc, schema ?? {}, []), null, 2)));
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
