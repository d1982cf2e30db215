/**
 * The reader of calls in a form the template analysis found (src/chat/template/analyze.ts;
 * AutoCalls in src/models/template-features.ts): the body of one marked section (./section-call.ts)
 * into calls, each checked against the request's tools.
 *
 * - json: one JSON object per call, or an array of them (Command R's and Apriel's), possibly
 *   several values one after another; the name and the arguments under the keys the template wrote.
 * - tagged: per call `nameOpen NAME nameClose`, per argument `argOpen KEY argMid VALUE argClose`,
 *   then `callClose` (Seed-OSS, and the forms of MiniMax M2 and GLM). Whitespace between markers is
 *   optional (templates differ in the newlines they put there, models too); a value is the text
 *   between its markers as written, typed by the tool's schema as the XML forms are (./xml-call.ts).
 */
import type { AutoCalls } from '../../models/template-features.js';
import { checkedCall, isObject, jsonEnd, type ParsedCall, type Tools } from './scan.js';
import type { SectionReader } from './section-call.js';
import { typeXmlValue } from './xml-call.js';

type Calls = ParsedCall[] | { reason: string };

export const autoReader = (format: AutoCalls, tools: Tools): SectionReader => (format.shape === 'json' ? (body) => jsonCalls(format, tools, body) : taggedReader(format, tools));

function jsonCalls(format: Extract<AutoCalls, { shape: 'json' }>, tools: Tools, body: string): Calls {
  const values: unknown[] = [];
  let i = 0;
  for (;;) {
    while (i < body.length && /[\s,]/.test(body[i]!)) i++;
    if (i >= body.length) break;
    if (body[i] !== '{' && body[i] !== '[') return { reason: 'text that is no JSON call' };
    const end = jsonEnd(body, i);
    if (end === -1) return { reason: 'an unterminated JSON call' };
    try {
      values.push(JSON.parse(body.slice(i, end)));
    } catch {
      return { reason: 'malformed JSON in a call' };
    }
    i = end;
  }
  const calls: ParsedCall[] = [];
  for (const value of values.flat()) {
    if (!isObject(value)) return { reason: 'a call that is not a JSON object' };
    const name = value[format.nameKey];
    if (typeof name !== 'string') return { reason: `a call without ${JSON.stringify(format.nameKey)}` };
    const call = checkedCall(tools, name, value[format.argsKey] ?? {});
    if ('reason' in call) return call;
    calls.push(call);
  }
  return calls;
}

/**
 * A marker matched with optional whitespace before it and inside it wherever it has some, and after
 * it unless `after` is false: a value follows (a value keeps its own leading whitespace, and a `\s*`
 * beside a lazy value would make a long run of spaces quadratic to match).
 */
function loose(marker: string, after = true): string {
  const body = marker.trim() === '' ? '' : marker.trim().split(/\s+/).map(escape).join('\\s*');
  return `\\s*${body}${after && body !== '' ? '\\s*' : ''}`;
}
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function taggedReader(format: Extract<AutoCalls, { shape: 'tagged' }>, tools: Tools): SectionReader {
  // The name: up to nameClose, or to the first argument (or the body's end) where the name closes with nothing.
  const nameEnd = format.nameClose.trim() !== '' ? loose(format.nameClose) : `(?=${loose(format.argOpen)}|\\s*${format.callClose.trim() ? escape(format.callClose.trim()) : '$'}|\\s*$)`;
  // Names and keys hold no whitespace, so the `\s*` around them is never ambiguous (linear matching).
  const head = new RegExp(`${loose(format.nameOpen)}([^\\s<>"]+?)${nameEnd}`, 'y');
  const argument = new RegExp(`${loose(format.argOpen)}([^\\s<>"]+)${loose(format.argMid, false)}([\\s\\S]*?)${escape(format.argClose.trim())}`, 'y');
  const callEnd = new RegExp(`${loose(format.callClose)}`, 'y');
  return (body) => {
    const calls: ParsedCall[] = [];
    let at = 0;
    while (body.slice(at).trim() !== '') {
      head.lastIndex = at;
      const named = head.exec(body);
      if (!named) return { reason: 'a call without its name' };
      const name = named[1]!;
      at = head.lastIndex;
      const schema = tools.get(name)?.inputSchema;
      const properties = isObject(schema?.properties) ? schema.properties : {};
      const pairs: Array<[string, unknown]> = [];
      for (;;) {
        argument.lastIndex = at;
        const found = argument.exec(body);
        if (!found) break;
        const key = found[1]!;
        // Own keys only, both ways: an argument the model names `__proto__` or `constructor` is a plain key.
        const property = Object.hasOwn(properties, key) ? properties[key] : undefined;
        pairs.push([key, isObject(property) ? typeXmlValue(found[2]!, property) : found[2]!]);
        at = argument.lastIndex;
      }
      const input = Object.fromEntries(pairs);
      callEnd.lastIndex = at;
      if (format.callClose.trim() !== '') {
        if (!callEnd.exec(body)) {
          // A call the generation cut off before its closer is read if nothing else follows.
          if (body.slice(at).trim() !== '') return { reason: `unexpected text in the call of ${name}` };
        } else at = callEnd.lastIndex;
      }
      const call = checkedCall(tools, name, input);
      if ('reason' in call) return call;
      calls.push(call);
    }
    return calls.length > 0 ? calls : { reason: 'no call in the section' };
  };
}
