/**
 * The fuzzer's request bodies: valid ones per endpoint, as clients send them, then mutations of the
 * object (wrong types, removed and added fields, odd strings and numbers, deep nesting, huge arrays,
 * prototype keys) and of its serialisation (broken JSON, other encodings and top-level types), each
 * with its label for the summary. Used by cases.ts.
 */
import { CHAT_MODEL, EMBED_MODEL } from './fuzz-case.js';
import { deepJson, nestingDepth, ODD_NUMBERS, oddString, Random, randomJson, randomString } from './random.js';

const WORDS = 'hello world rivers music bright quiet storm garden paper engine report friend window'.split(' ');
const sentence = (rng: Random) => Array.from({ length: rng.int(1, 8) }, () => rng.pick(WORDS)).join(' ');

export function validMessagesBody(rng: Random, withMaxTokens: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { model: CHAT_MODEL, messages: [{ role: 'user', content: sentence(rng) }] };
  if (withMaxTokens) body.max_tokens = rng.int(1, 4);
  if (rng.chance(0.2)) body.system = rng.chance(0.5) ? sentence(rng) : [{ type: 'text', text: sentence(rng), cache_control: { type: 'ephemeral' } }];
  if (rng.chance(0.15)) {
    body.messages = [
      { role: 'user', content: [{ type: 'text', text: sentence(rng) }] },
      { role: 'assistant', content: sentence(rng) },
      { role: 'user', content: sentence(rng) },
    ];
  }
  if (withMaxTokens) {
    if (rng.chance(0.2)) body.temperature = rng.pick([0, 0.5, 1]);
    if (rng.chance(0.1)) body.top_p = 0.9;
    if (rng.chance(0.1)) body.top_k = 5;
    if (rng.chance(0.1)) body.stop_sequences = ['\n\n', 'END'];
    if (rng.chance(0.1)) body.metadata = { user_id: 'u1' };
  }
  if (rng.chance(0.05)) body.thinking = { type: 'disabled' };
  return body;
}

/** A chat completion as the `openai` SDK sends it, with the optional fields clients use. */
export function validChatBody(rng: Random): Record<string, unknown> {
  const body: Record<string, unknown> = { model: CHAT_MODEL, messages: [{ role: 'user', content: sentence(rng) }] };
  body[rng.chance(0.5) ? 'max_completion_tokens' : 'max_tokens'] = rng.int(1, 4);
  if (rng.chance(0.2)) (body.messages as unknown[]).unshift({ role: rng.pick(['system', 'developer']), content: sentence(rng) });
  if (rng.chance(0.1)) body.messages = [{ role: 'user', content: [{ type: 'text', text: sentence(rng) }] }, { role: 'assistant', content: sentence(rng) }, { role: 'user', content: sentence(rng) }];
  if (rng.chance(0.2)) body.temperature = rng.pick([0, 0.7, 1.5]);
  if (rng.chance(0.1)) body.stop = rng.pick(['\n', ['END', '\n\n']]);
  if (rng.chance(0.1)) body.seed = rng.int(0, 1000);
  if (rng.chance(0.1)) body.response_format = { type: 'json_object' };
  if (rng.chance(0.05)) body.logprobs = true;
  // The benchmark extension: with the bounded max_tokens, a run to the limit stays short.
  if (rng.chance(0.05)) body.ignore_eos = true;
  return body;
}

/** A Responses body as the SDKs and Codex send it: a string or items, instructions, tools, a format. */
export function validResponsesBody(rng: Random): Record<string, unknown> {
  const body: Record<string, unknown> = { model: CHAT_MODEL, max_output_tokens: rng.int(1, 4) };
  body.input = rng.weighted<() => unknown>([
    [3, () => sentence(rng)],
    [2, () => [{ role: 'user', content: sentence(rng) }]],
    [1, () => [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: sentence(rng) }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: sentence(rng) }] },
    ]],
    [1, () => [
      { role: 'user', content: sentence(rng) },
      { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' },
      { type: 'function_call_output', call_id: 'call_1', output: sentence(rng) },
    ]],
  ])();
  if (rng.chance(0.2)) body.instructions = sentence(rng);
  if (rng.chance(0.2)) body.temperature = rng.pick([0, 0.7, 1.5]);
  if (rng.chance(0.2)) body.tools = [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } }, ...(rng.chance(0.5) ? [{ type: 'web_search' }] : [])];
  if (rng.chance(0.1)) body.text = { format: { type: 'json_object' } };
  if (rng.chance(0.2)) body.store = rng.chance(0.5);
  if (rng.chance(0.1)) body.reasoning = { effort: rng.pick(['none', 'low']) };
  if (rng.chance(0.05)) body.ignore_eos = true;
  return body;
}

export function validEmbeddingsBody(rng: Random, model: string | undefined = EMBED_MODEL): Record<string, unknown> {
  const body: Record<string, unknown> = {
    input: rng.weighted<() => unknown>([
      [4, () => sentence(rng)],
      [3, () => Array.from({ length: rng.int(1, 8) }, () => sentence(rng))],
      [1, () => Array.from({ length: rng.int(1, 8) }, () => rng.int(0, 1000))],
      [1, () => [Array.from({ length: rng.int(1, 5) }, () => rng.int(0, 1000))]],
    ])(),
  };
  if (model !== undefined) body.model = model;
  if (rng.chance(0.3)) body.encoding_format = rng.pick(['float', 'base64']);
  if (rng.chance(0.1)) body.user = 'u1';
  return body;
}

/** What serializeBody must do beyond JSON.stringify: nest the DEEP marker `depth` levels, add prototype keys. */
const MARKERS = new WeakMap<object, { depth?: number; proto?: boolean }>();
const markersOf = (body: object) => {
  let m = MARKERS.get(body);
  if (!m) MARKERS.set(body, (m = {}));
  return m;
};

/** A marker replaced in the serialised body by deeply nested JSON text. */
const DEEP_VALUE = '\u0000__DEEP__\u0000';
/** The marker as JSON.stringify writes it (the NULs escaped). */
const DEEP = JSON.stringify(DEEP_VALUE);

/** Paths to values in a body, for mutation: ['messages', 0, 'content']. */
function paths(value: unknown, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  if (prefix.length > 0) out.push(prefix);
  if (prefix.length >= 4) return out;
  if (Array.isArray(value)) value.slice(0, 3).forEach((v, i) => paths(v, [...prefix, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out);
  return out;
}

function setAt(root: Record<string, unknown>, path: Array<string | number>, value: unknown, remove = false): void {
  let node: any = root;
  for (const key of path.slice(0, -1)) node = node[key];
  const last = path.at(-1)!;
  if (remove) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else {
    node[last] = value;
  }
}

/** One mutation of a body object; returns its label. `fields` are the dialect's known optional fields. */
export function mutateBody(rng: Random, body: Record<string, unknown>, fields: string[]): string {
  const all = paths(body);
  const target = all.length > 0 ? rng.pick(all) : [rng.pick(fields)];
  const where = target.join('.');
  const op = rng.weighted<number>([[4, 0], [2, 1], [2, 2], [3, 3], [1.5, 4], [1, 5], [2, 6], [1, 7]]);
  switch (op) {
    case 0: {
      setAt(body, target, randomJson(rng));
      return `${where}: wrong type`;
    }
    case 1: {
      setAt(body, target, undefined, true);
      return `${where}: removed`;
    }
    case 2: {
      const key = rng.chance(0.5) ? rng.pick(fields) : rng.pick(['__proto__', 'constructor', 'extra', '', randomString(rng, 5)]);
      body[key] = randomJson(rng);
      return `field ${JSON.stringify(key)} added`;
    }
    case 3: {
      const text = oddString(rng);
      setAt(body, target, text);
      return `${where}: odd string (${text.length} units)`;
    }
    case 4: {
      const depth = nestingDepth(rng);
      const field = rng.chance(0.5) ? rng.pick(['encoding_format', 'input', 'messages', 'system', 'metadata', 'tools', 'dimensions']) : where;
      if (rng.chance(0.5) || !field.includes('.')) body[field.split('.')[0]!] = DEEP_VALUE;
      else setAt(body, target, DEEP_VALUE);
      markersOf(body).depth = depth;
      return `${field.includes('.') ? where : field}: nested ${depth} levels`;
    }
    case 5: {
      const n = rng.pick([100, 1000, 2049, 5000]);
      const key = rng.pick(['messages', 'input', 'stop_sequences', 'tools']);
      body[key] = Array.from({ length: n }, () => (key === 'messages' ? { role: 'user', content: 'x' } : key === 'input' ? 'x' : key === 'tools' ? { name: 't', input_schema: { type: 'object' } } : 'x'));
      return `${key}: ${n} items`;
    }
    case 6: {
      const value = rng.pick(ODD_NUMBERS);
      setAt(body, target, value);
      return `${where}: number ${value}`;
    }
    default: {
      // Prototype pollution attempts, textually (JSON.stringify would drop __proto__ as an own key otherwise).
      markersOf(body).proto = true;
      return '__proto__ / constructor.prototype keys';
    }
  }
}

/** Serialises a body, applying the markers left by mutateBody. */
export function serializeBody(body: Record<string, unknown>): string {
  const { depth, proto } = markersOf(body);
  let text = JSON.stringify(body);
  if (depth !== undefined) {
    const rng = new Random(depth, text.length);
    text = text.split(DEEP).join(deepJson(rng, depth));
  }
  if (proto) text = text.replace(/^\{/, '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}},');
  return text;
}

/** A serialisation mutation: broken JSON, other encodings, other top-level types. */
export function mutateSerialization(rng: Random, text: string): [Buffer, string] {
  const op = rng.int(0, 13);
  switch (op) {
    case 0: return [Buffer.from(text.slice(0, rng.int(0, text.length - 1))), 'truncated JSON'];
    case 1: {
      const at = rng.int(0, text.length);
      return [Buffer.from(text.slice(0, at) + rng.pick(['}', ']', ',', '"', ':', '\\', '\u0000', 'undefined', '{{']) + text.slice(at)), 'garbage inside JSON'];
    }
    case 2: return [Buffer.from(text + rng.pick(['x', '}', ' {}', '\n\n', '\u0000'])), 'trailing garbage after JSON'];
    case 3: return [Buffer.from(text.replace(/^\{/, '{"model":"a",')), 'duplicated key'];
    case 4: return [Buffer.from(JSON.stringify(rng.pick<unknown>([[], [text], 'text', 0, null, true, [{}]]))), 'JSON that is not an object'];
    case 5: return [Buffer.alloc(0), 'empty body'];
    case 6: return [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), 'UTF-8 BOM'];
    case 7: {
      const bytes = Buffer.from(text);
      const at = rng.int(0, bytes.length);
      const bad = rng.pick([[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80]]);
      return [Buffer.concat([bytes.subarray(0, at), Buffer.from(bad), bytes.subarray(at)]), 'invalid UTF-8 bytes'];
    }
    case 8: return [Buffer.from(text.replace(/:(\d+)/, ':NaN').replace(/:true/, ':Infinity')), 'NaN / Infinity tokens'];
    case 9: return [Buffer.from(text.replace(/\}$/, ',}')), 'trailing comma'];
    case 10: return [Buffer.from(text.replace(/"/g, "'")), 'single quotes'];
    case 11: return [Buffer.from(`/* c */ ${text}`), 'comment before JSON'];
    case 12: return [Buffer.from(' '.repeat(rng.pick([10, 100_000])) + text), 'leading whitespace'];
    default: return [Buffer.from(text, 'utf16le'), 'UTF-16LE body'];
  }
}

/**
 * The most output the bundled chat model gives (its window, 32,768 tokens; GET /v1/models shows it
 * as max_tokens): a larger max_tokens is refused (400), a smaller one is served.
 */
export const CHAT_MAX_OUTPUT_TOKENS = 32_768;

/**
 * Keeps a generation short: a fuzz case that reaches the model must not decode thousands of tokens.
 * Every value the model would serve is lowered to `cap`; larger ones stay, to be refused. (This
 * bound was 4,096, the model's window when the fuzzer was written; once the window became 32,768,
 * the odd values 4097 and 32001 were served, generations of minutes that timed out the fuzzer's
 * 30 s read and filled the worker's batch, so that short requests behind them timed out too.)
 */
export function boundMaxTokens(body: Record<string, unknown>, cap: number): void {
  for (const field of ['max_tokens', 'max_completion_tokens', 'max_output_tokens']) {
    const v = body[field];
    if (typeof v === 'number' && Number.isInteger(v) && v > cap && v <= CHAT_MAX_OUTPUT_TOKENS) body[field] = cap;
  }
}
