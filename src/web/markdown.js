// Markdown for model replies, sanitized by construction: the text is parsed here into DOM nodes
// made with createElement and filled with textContent. Nothing is ever parsed as HTML (no DOM
// property or method that parses markup is used), so a reply's `<img onerror=…>` is characters.
// Links are made only for http(s) URLs (rel="noopener noreferrer", a new tab); any other link is
// left as the text it was written as. What is understood: paragraphs (a single newline stays a
// line break), ATX headings, fenced code blocks (``` or ~~~, with a Copy button; an unclosed fence
// runs to the end, as while a reply streams), indented code is not (a model's indentation is
// usually prose), bullet and numbered lists (nested by indentation), block quotes, rules, GFM
// tables, and inline: code spans, **bold**, *italic*, ~~struck~~, [links](https://…), bare
// https:// URLs and backslash escapes.
'use strict';

const Markdown = (() => {
  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
  const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
  const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
  const QUOTE = /^ {0,3}> ?(.*)$/;
  const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:\s+(.*))?$/;
  const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
  const PUNCTUATION = /[!-/:-@[-`{-~]/;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const blank = (line) => line.trim() === '';
  /** The lines of a text, tabs as four spaces (indentation decides list nesting). */
  const linesOf = (text) => text.replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n');

  /** Does this line start a block other than a paragraph (so it ends a paragraph)? */
  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || (ITEM.test(line) && ITEM.exec(line)[3] !== undefined);
  }

  // ------------------------------------------------------------ blocks

  /**
   * How deep blocks and inline spans nest (quotes in quotes, lists in lists, emphasis in emphasis):
   * past MAX_DEPTH the rest is text, so that no reply can exhaust the stack.
   */
  const MAX_DEPTH = 24;
  let depth = 0;
  const tooDeep = () => depth >= MAX_DEPTH;

  /** Appends the blocks of `lines` to `parent`. */
  function blocks(lines, parent) {
    if (tooDeep()) return void parent.append(el('p', '', lines.join('\n')));
    depth++;
    try {
      blocksAt(lines, parent);
    } finally {
      depth--;
    }
  }

  function blocksAt(lines, parent) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (blank(line)) {
        i++;
        continue;
      }
      let m;
      if ((m = FENCE.exec(line))) {
        i = codeBlock(lines, i, m, parent);
      } else if ((m = HEADING.exec(line))) {
        const heading = el(`h${m[1].length}`, 'md-heading');
        inline(m[2] || '', heading);
        parent.append(heading);
        i++;
      } else if (RULE.test(line)) {
        parent.append(el('hr'));
        i++;
      } else if (QUOTE.test(line)) {
        const inner = [];
        while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
          inner.push(m[1]);
          i++;
        }
        const quote = el('blockquote');
        blocks(inner, quote);
        parent.append(quote);
      } else if ((m = ITEM.exec(line)) && m[3] !== undefined) {
        i = list(lines, i, parent);
      } else if (line.includes('|') && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes('-')) {
        i = table(lines, i, parent);
      } else {
        const text = [line];
        i++;
        while (i < lines.length && !blank(lines[i]) && !startsBlock(lines[i])) text.push(lines[i++]);
        const p = el('p');
        inline(text.join('\n'), p);
        parent.append(p);
      }
    }
  }

  /** A fenced code block from line `start`; returns the line after it. */
  function codeBlock(lines, start, match, parent) {
    const fence = match[1];
    const language = match[2];
    const indent = /^ */.exec(lines[start])[0].length;
    const body = [];
    let i = start + 1;
    for (; i < lines.length; i++) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[i]);
      if (close && close[1][0] === fence[0] && close[1].length >= fence.length) {
        i++;
        break;
      }
      // Lines are dedented by the opening fence's indentation, as CommonMark does.
      body.push(lines[i].replace(new RegExp(`^ {0,${indent}}`), ''));
    }
    const code = body.join('\n');
    const figure = el('div', 'md-code');
    const bar = el('div', 'md-code-bar');
    bar.append(el('span', 'md-code-lang', language));
    const copy = el('button', 'md-copy', 'Copy');
    copy.type = 'button';
    copy.setAttribute('aria-label', `Copy the ${language ? `${language} ` : ''}code`);
    copy.addEventListener('click', () => copyText(code, copy));
    bar.append(copy);
    const pre = el('pre');
    const codeNode = el('code', language ? `language-${language.replace(/[^\w+#.-]/g, '')}` : '', code);
    pre.append(codeNode);
    figure.append(bar, pre);
    parent.append(figure);
    return i;
  }

  /**
   * The clipboard API where the page is a secure context (http://127.0.0.1 and localhost are);
   * elsewhere (plain http on another host) a hidden textarea and the copy command.
   */
  async function copyText(text, button) {
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        ok = true;
      }
    } catch {
      ok = false;
    }
    if (!ok) {
      const area = el('textarea', 'md-copy-area');
      area.value = text;
      area.setAttribute('readonly', '');
      document.body.append(area);
      area.select();
      try {
        ok = document.execCommand('copy');
      } catch {
        ok = false;
      }
      area.remove();
    }
    button.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => (button.textContent = 'Copy'), 1500);
  }

  /** A list (bullets or numbers) from line `start`, nested lists inside; returns the line after it. */
  function list(lines, start, parent) {
    const first = ITEM.exec(lines[start]);
    const indent = first[1].length;
    const ordered = /\d/.test(first[2]);
    const node = el(ordered ? 'ol' : 'ul');
    if (ordered && Number.parseInt(first[2], 10) !== 1) node.start = Number.parseInt(first[2], 10);
    const items = [];
    let i = start;
    while (i < lines.length) {
      const m = ITEM.exec(lines[i]);
      if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
      const contentIndent = indent + m[2].length + 1;
      const body = [m[3] || ''];
      i++;
      let sawBlank = false;
      for (; i < lines.length; i++) {
        const line = lines[i];
        if (blank(line)) {
          sawBlank = true;
          body.push('');
          continue;
        }
        const lead = /^ */.exec(line)[0].length;
        const sub = ITEM.exec(line);
        if (lead >= Math.min(contentIndent, indent + 2)) {
          body.push(line.slice(Math.min(lead, contentIndent)));
          sawBlank = false;
          continue;
        }
        // A line at the list's own indentation: the next item, or the end of the list; an
        // unindented line right after the text continues it (a lazy continuation line).
        if (sub || sawBlank || startsBlock(line)) break;
        body.push(line);
      }
      while (body.length > 0 && blank(body[body.length - 1])) body.pop();
      items.push(body);
      // A blank line between items is kept by the loop above; one followed by a non-item ends here.
    }
    for (const body of items) {
      const li = el('li');
      const tight = !body.some(blank) && !body.slice(1).some((line) => startsBlock(line));
      if (tight) inline(body.join('\n'), li);
      else blocks(body, li);
      node.append(li);
    }
    parent.append(node);
    return i;
  }

  const cells = (line) => {
    let row = line.trim();
    if (row.startsWith('|')) row = row.slice(1);
    if (row.endsWith('|') && !row.endsWith('\\|')) row = row.slice(0, -1);
    return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, '|'));
  };

  /** A GFM table: a header row, the rule under it, and the rows up to a blank line. */
  function table(lines, start, parent) {
    const head = cells(lines[start]);
    const aligns = cells(lines[start + 1]).map((c) => (c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : ''));
    const node = el('table', 'md-table');
    const row = (values, tag) => {
      const tr = el('tr');
      head.forEach((_, k) => {
        const cell = el(tag);
        if (aligns[k]) cell.className = `align-${aligns[k]}`;
        inline(values[k] || '', cell);
        tr.append(cell);
      });
      return tr;
    };
    const thead = el('thead');
    thead.append(row(head, 'th'));
    const tbody = el('tbody');
    let i = start + 2;
    while (i < lines.length && !blank(lines[i]) && lines[i].includes('|')) tbody.append(row(cells(lines[i++]), 'td'));
    node.append(thead, tbody);
    const scroll = el('div', 'md-table-scroll');
    scroll.append(node);
    parent.append(scroll);
    return i;
  }

  // ------------------------------------------------------------ inline

  /** An http(s) URL as an absolute href, or null for anything else (javascript:, data:, relative). */
  function safeUrl(raw) {
    try {
      const url = new URL(raw.trim());
      return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
    } catch {
      return null;
    }
  }

  /** A link; its text is Markdown without links (`[…](…)` text), or plain (a bare URL). */
  function link(href, text, parent, plain) {
    const a = el('a');
    a.href = href;
    a.rel = 'noopener noreferrer';
    a.target = '_blank';
    if (plain) a.textContent = text;
    else inline(text, a, true);
    parent.append(a);
  }

  /** Where a closing `delim` for an opener ending at `from` is (not after whitespace), or -1. */
  function closing(text, delim, from) {
    let at = from;
    for (;;) {
      at = text.indexOf(delim, at);
      if (at === -1) return -1;
      const single = delim.length === 1;
      const doubled = single && (text[at + 1] === delim || text[at - 1] === delim);
      if (at > from && !/\s/.test(text[at - 1]) && !doubled) {
        // `_` closes only at the end of a word (snake_case stays as it is).
        if (delim[0] !== '_' || !/\w/.test(text[at + delim.length] || '')) return at;
      }
      at += single && doubled ? 2 : 1;
    }
  }

  /** Appends the inline content of `text` to `parent`; `inLink`: no links inside (a link's own text). */
  function inline(text, parent, inLink = false) {
    if (tooDeep()) return void parent.append(document.createTextNode(text));
    depth++;
    try {
      inlineAt(text, parent, inLink);
    } finally {
      depth--;
    }
  }

  function inlineAt(text, parent, inLink) {
    let plain = '';
    /** delim -> a position from which it has no closer (nor from any later one): keeps `*a*a*a…` linear. */
    const unclosed = new Map();
    const closer = (delim, from) => {
      if (unclosed.has(delim) && from >= unclosed.get(delim)) return -1;
      const at = closing(text, delim, from);
      if (at === -1) unclosed.set(delim, Math.min(from, unclosed.get(delim) ?? from));
      return at;
    };
    const flush = () => {
      if (plain !== '') parent.append(document.createTextNode(plain));
      plain = '';
    };
    let i = 0;
    while (i < text.length) {
      const c = text[i];
      const rest = text.slice(i);
      if (c === '\\' && i + 1 < text.length && PUNCTUATION.test(text[i + 1])) {
        plain += text[i + 1];
        i += 2;
        continue;
      }
      if (c === '`') {
        const run = /^`+/.exec(rest)[0];
        const end = text.indexOf(run, i + run.length);
        // Exactly the opening run closes the span.
        let close = end;
        while (close !== -1 && text[close + run.length] === '`') close = text.indexOf(run, close + run.length + 1);
        if (close !== -1) {
          flush();
          let code = text.slice(i + run.length, close).replace(/\n/g, ' ');
          if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ')) code = code.slice(1, -1);
          parent.append(el('code', 'md-inline-code', code));
          i = close + run.length;
          continue;
        }
        plain += run;
        i += run.length;
        continue;
      }
      const strong = /^(\*\*|__)(?=\S)/.exec(rest);
      const struck = /^~~(?=\S)/.exec(rest);
      const em = /^([*_])(?=[^\s*_])/.exec(rest);
      const delim = strong ? strong[1] : struck ? '~~' : em ? em[1] : null;
      // `_` opens only at the start of a word.
      if (delim && !(delim[0] === '_' && /\w/.test(text[i - 1] || ''))) {
        const end = closer(delim, i + delim.length);
        if (end !== -1) {
          flush();
          const node = el(strong ? 'strong' : struck ? 'del' : 'em');
          inline(text.slice(i + delim.length, end), node, inLink);
          parent.append(node);
          i = end + delim.length;
          continue;
        }
      }
      if (c === '[' && !inLink) {
        const m = /^\[([^\]\n]+)\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)/.exec(rest);
        if (m) {
          const href = safeUrl(m[2]);
          if (href) {
            flush();
            link(href, m[1], parent);
          } else plain += m[0]; // not http(s): the text as written
          i += m[0].length;
          continue;
        }
      }
      if (c === '<' && !inLink) {
        const m = /^<(https?:\/\/[^\s<>]+)>/.exec(rest);
        if (m && safeUrl(m[1])) {
          flush();
          link(safeUrl(m[1]), m[1], parent, true);
          i += m[0].length;
          continue;
        }
      }
      if ((c === 'h' || c === 'H') && !inLink && !/\w/.test(text[i - 1] || '')) {
        const m = /^https?:\/\/[^\s<>"'`]+/i.exec(rest);
        if (m) {
          // Trailing punctuation ends the sentence, not the URL; so does a ) with no ( in the URL.
          let url = m[0].replace(/[.,;:!?*_~]+$/, '');
          if (url.endsWith(')') && !url.includes('(')) url = url.slice(0, -1);
          const href = safeUrl(url);
          if (href) {
            flush();
            link(href, url, parent, true);
            i += url.length;
            continue;
          }
        }
      }
      plain += c;
      i++;
    }
    flush();
  }

  /** The Markdown of `text` as a fragment of DOM nodes (nothing parsed as HTML). */
  function render(text) {
    const fragment = document.createDocumentFragment();
    blocks(linesOf(text), fragment);
    return fragment;
  }

  return { render };
})();
