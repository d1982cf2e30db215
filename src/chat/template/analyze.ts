/**
 * The differential analysis of a chat template: render probe conversations that differ in one
 * thing (an answer, the same answer with a thought, a call instead of the answer, the generation
 * prompt with thinking on and off), compare the renders (./render-diff.ts), and read the markers
 * around the known probe strings. What it finds is a family description (AutoFormat, in
 * src/models/template-features.ts) for templates no dedicated format recognises: Command R / R7B,
 * Seed-OSS, Apriel, Granite 3.3, SmolLM3's thought.
 *
 * llama.cpp's idea (common/chat-diff-analyzer.cpp, its probe names too: the strings are chosen to
 * appear nowhere else in a template); the reading here is ours and smaller: a call is either JSON
 * (an object per call, or an array of them, found by parsing the render around the function's name)
 * or tagged (the markers between the known name, argument names and values of two arguments).
 * Pure apart from rendering; a few renders, once per template (./family-features.ts caches it).
 */
import type { AutoCalls, AutoFormat } from '../../models/template-features.js';
import type { TemplateMessage } from './render.js';
import { jsonEnd } from '../tools/scan.js';
import { diffRenders } from './render-diff.js';
import { renderSource } from './render-source.js';

const FUN = 'FFF_FIRST_FUN_F';
const FUN_SECOND = 'SSS_SECOND_FUN_S';
const ARG = 'AA_ARG_FST_AA';
const ARG_SECOND = 'BB_ARG_SND_BB';
const VALUE = 'XXXX';
const VALUE_SECOND = 'YYYY';
const USER = 'U_USER_MSG Hello END_U';
const ANSWER = 'A_ASST_MSG I can help END_A';
const THOUGHT = 'REASON_PART I am thinking END_R';
const PROBE_ID = 'call00001';

const parameters = { type: 'object', properties: { [ARG]: { type: 'string', description: 'First argument' }, [ARG_SECOND]: { type: 'string', description: 'Second argument' } }, required: [] };
const PROBE_TOOLS = [FUN, FUN_SECOND].map((name) => ({ type: 'function', function: { name, description: `Test function ${name}`, parameters } }));
const user: TemplateMessage = { role: 'user', content: USER };
const call = (name: string, id: string, args: Record<string, unknown>) => ({ type: 'function' as const, id, function: { name, arguments: args } });

/** A special-token-looking marker of a turn (`<|CHATBOT_TOKEN|>`, `<|im_start|>`). */
const TURN_MARKER = /<\|[A-Za-z0-9_]+\|>/g;
/** A whole marker: `<…>` or `[…]` without nesting. */
const MARKER = /<[^<>\s]+>|\[[^[\]\n]+\]/g;

/** What the template's renders say, or undefined where it renders no assistant turn. */
export function analyzeTemplate(source: string): AutoFormat | undefined {
  const render = (messages: TemplateMessage[], options: Record<string, unknown> = {}) => renderSource(source, [user, ...messages], { tools: PROBE_TOOLS, add_generation_prompt: false, ...options });
  const base = render([]);
  const answered = render([{ role: 'assistant', content: ANSWER }]);
  if (base === undefined || answered === undefined || !answered.includes(ANSWER)) return undefined;
  // The generation prompt with thinking on and off: what each adds to the same conversation without it.
  // (A template may write the empty thought outside the generation prompt, Command R7B: the whole
  // renders are compared too.)
  const whole = (thinking: boolean) => render([], { add_generation_prompt: true, enable_thinking: thinking });
  const generation = (thinking: boolean) => {
    const without = render([], { enable_thinking: thinking });
    const prompt = whole(thinking);
    return without !== undefined && prompt !== undefined ? diffRenders(without, prompt).right : undefined;
  };
  const promptOn = generation(true);
  const withThought = render([{ role: 'assistant', content: ANSWER, reasoning_content: THOUGHT }]);
  const thought = thoughtMarkers({ answered, withThought, promptOn, promptOff: generation(false) }) ?? thoughtMarkers({ answered, promptOn: whole(true), promptOff: whole(false) });
  const called = render([{ role: 'assistant', content: '', tool_calls: [call(FUN, PROBE_ID, { [ARG]: VALUE, [ARG_SECOND]: VALUE_SECOND })] }]);
  const callDiff = called !== undefined && called.includes(VALUE_SECOND) ? diffRenders(answered, called) : undefined;
  const calls = callDiff ? callFormat(withoutEmptyThought(callDiff.right, thought)) : undefined;
  const content = callDiff ? around(callDiff.left, ANSWER) : undefined;
  // The turn's own special tokens (its header, its end): a model writes them too (Command R+ opens its
  // answer with `<|CHATBOT_TOKEN|>`), and they are never the client's text.
  const header = promptOn ?? '';
  const turn = [...new Set([...header.matchAll(TURN_MARKER), ...diffRenders(base, answered).right.matchAll(TURN_MARKER)].map((m) => m[0]))];
  // A thought that starts unmarked: what the generation prompt writes after its turn markers begins it.
  // (Only where the header's end is known by a turn marker: the lead is what follows the last one.)
  const headerEnds = [...header.matchAll(TURN_MARKER)].map((m) => m.index + m[0].length);
  const lead = thought?.open === '' && headerEnds.length > 0 ? header.slice(Math.max(...headerEnds)).trim() : '';
  return {
    ...(thought ? { thought: lead !== '' && !lead.startsWith('<') ? { ...thought, lead } : thought } : {}),
    ...(content && (content.open !== '' || content.close !== '') ? { content } : {}),
    ...(calls ? { calls } : {}),
    turn: turn.filter((marker) => marker !== thought?.open && marker !== thought?.close),
  };
}

/** The trimmed text before and after `needle` in `side`, or undefined where it is not there. */
function around(side: string, needle: string): { open: string; close: string } | undefined {
  const at = side.indexOf(needle);
  if (at === -1) return undefined;
  return { open: side.slice(0, at).trim(), close: side.slice(at + needle.length).trim() };
}

/**
 * The thought's markers: around the thought where the template renders one in the history (its
 * diff from the same answer without it), else the empty thought a template writes in its generation
 * prompt with thinking off (`<think>\n\n</think>`, Command R7B's `<|START_THINKING|><|END_THINKING|>`).
 */
function thoughtMarkers(renders: { answered: string; withThought?: string | undefined; promptOn: string | undefined; promptOff: string | undefined }): { open: string; close: string } | undefined {
  const { answered, withThought, promptOn, promptOff } = renders;
  if (withThought !== undefined && withThought !== answered) {
    const found = around(diffRenders(answered, withThought).right, THOUGHT);
    if (found && found.close !== '') return found;
  }
  if (promptOn === undefined || promptOff === undefined || promptOn === promptOff) return undefined;
  const { left, right } = diffRenders(promptOn, promptOff);
  const empty = (right.length > left.length ? right : left).trim();
  const markers = [...empty.matchAll(MARKER)].map((m) => m[0]);
  if (markers.length !== 2 || empty.replace(markers[0]!, '').replace(markers[1]!, '').trim() !== '') return undefined;
  return { open: markers[0]!, close: markers[1]! };
}

/** A call's render without the empty thought some templates write before it (Command R7B). */
function withoutEmptyThought(side: string, thought: { open: string; close: string } | undefined): string {
  const text = side.trim();
  if (!thought || thought.open === '' || !text.startsWith(thought.open)) return text;
  const rest = text.slice(thought.open.length).trimStart();
  return rest.startsWith(thought.close) ? rest.slice(thought.close.length).trim() : text;
}

/** How the call in `side` (one call of FUN with two arguments) is written. */
function callFormat(side: string): AutoCalls | undefined {
  if (!side.includes(FUN)) return undefined;
  return jsonCalls(side) ?? taggedCalls(side);
}

/** JSON calls: the leftmost JSON value around the name that parses, its keys read. */
function jsonCalls(side: string): AutoCalls | undefined {
  const name = side.indexOf(FUN);
  for (let start = 0; start < name; start++) {
    if (side[start] !== '{' && side[start] !== '[') continue;
    const end = jsonEnd(side, start);
    if (end <= name) continue;
    let value: unknown;
    try {
      value = JSON.parse(side.slice(start, end));
    } catch {
      continue;
    }
    const array = Array.isArray(value);
    const first = array ? (value as unknown[])[0] : value;
    if (typeof first !== 'object' || first === null) return undefined;
    const entries = Object.entries(first);
    const nameKey = entries.find(([, v]) => v === FUN)?.[0];
    const argsKey = entries.find(([, v]) => typeof v === 'object' && v !== null && ARG in v)?.[0];
    if (nameKey === undefined || argsKey === undefined) return undefined;
    // A call id the template writes itself (Command R's `"tool_call_id": "0"`, before the name): the
    // forced-call grammar writes it as the template does; one that echoes the probe's id is the client's.
    const idAt = entries.findIndex(([k, v]) => k !== nameKey && k !== argsKey && typeof v === 'string' && /id/i.test(k));
    const [idKey, idValue] = idAt === -1 ? [] : entries[idAt]!;
    const id = idKey !== undefined && idValue !== PROBE_ID ? { key: idKey, value: idValue as string, first: idAt < entries.findIndex(([k]) => k === nameKey) } : undefined;
    const open = side.slice(0, start).trim();
    if (open === '') return undefined;
    return { shape: 'json', open, close: side.slice(end).trim(), array, nameKey, argsKey, ...(id ? { id } : {}) };
  }
  return undefined;
}

/**
 * Tagged calls: `open nameOpen FUN nameClose argOpen ARG argMid VALUE argClose argOpen ARG_SECOND …
 * callClose close`. The argument opener is what precedes both argument names (from its last `<`);
 * the name's opener is the unclosed tag the name sits in (`<function=`, `<invoke name="`), or
 * nothing (GLM writes the bare name after its section marker).
 */
function taggedCalls(side: string): AutoCalls | undefined {
  const name = side.indexOf(FUN);
  const arg = side.indexOf(ARG, name);
  const value = side.indexOf(VALUE, arg);
  const argSecond = side.indexOf(ARG_SECOND, value);
  const valueSecond = side.indexOf(VALUE_SECOND, argSecond);
  if (arg === -1 || value === -1 || argSecond === -1 || valueSecond === -1) return undefined;
  const beforeFirst = side.slice(name + FUN.length, arg);
  const beforeSecond = side.slice(value + VALUE.length, argSecond);
  let common = 0;
  while (common < beforeFirst.length && common < beforeSecond.length && beforeFirst[beforeFirst.length - 1 - common] === beforeSecond[beforeSecond.length - 1 - common]) common++;
  const shared = beforeFirst.slice(beforeFirst.length - common);
  const tagAt = shared.lastIndexOf('<');
  const argOpen = (tagAt === -1 ? shared : shared.slice(tagAt)).trim();
  // Arguments as a JSON object after the name (Mistral's `[ARGS]{…}`, Kimi's) are no tagged form.
  if (!argOpen.startsWith('<')) return undefined;
  const nameClose = beforeFirst.slice(0, beforeFirst.lastIndexOf(argOpen)).trim();
  const argClose = beforeSecond.slice(0, beforeSecond.lastIndexOf(argOpen)).trim();
  const argMid = side.slice(arg + ARG.length, value).trim();
  const head = side.slice(0, name);
  const unclosed = head.lastIndexOf('<') > head.lastIndexOf('>') ? head.slice(head.lastIndexOf('<')) : '';
  const open = head.slice(0, head.length - unclosed.length).trim();
  if (open === '' || argClose === '') return undefined;
  let tail = side.slice(valueSecond + VALUE_SECOND.length).trim();
  if (tail.startsWith(argClose)) tail = tail.slice(argClose.length).trim();
  // The section's closer is the last marker; a call's closer (`</function>`) what precedes it.
  const markers = [...tail.matchAll(MARKER)].map((m) => m[0]);
  const close = markers.at(-1) ?? '';
  const callClose = tail.slice(0, tail.length - close.length).trim();
  return { shape: 'tagged', open, close, nameOpen: unclosed, nameClose, argOpen, argMid, argClose, callClose };
}
