/**
 * Prompt tokenization time on the bundled chat model (tiny-qwen3-random: the real Qwen3 tokenizer
 * and template, context 32,768), in-process through renderPrompt, the path count_tokens and
 * generation take in a worker: large prompts are refused (prompt_too_long) or counted in bounded
 * time whatever their content; and the encoder alone with a budget of a million tokens, as a model
 * with a 30x larger window would have. Median of --runs runs after one warm-up run.
 *
 *   npm run bench:tokenize [-- --runs 5]
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBundledModels } from '../builders/bundled/index.js';
import { describeModel } from '../../src/models/registry.js';
import { loadTokenizer } from '../../src/engines/onnx/tokenizer.js';
import { renderPrompt } from '../../src/chat/prompt.js';
import { PromptEncoder } from '../../src/tokenize/prompt-encoder.js';
import { median, writeResults } from './report.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const RUNS = Number(values.runs);
const MODEL = 'tiny-qwen3-random';
const OUTPUT_TOKENS = 256;

ensureBundledModels({ modelsDir: path.resolve('models') });
const loaded = await loadTokenizer(describeModel(path.resolve('models', MODEL), 1));

const MB = 1_000_000;
const WORDS = 'the river city people music market bright quiet storm garden paper engine report friend window ';
const repeat = (unit: string, chars: number) => unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars);
/** Letters from a fixed linear congruential sequence: one pre-tokenized word of many merges. */
const letters = (n: number) => {
  let x = 12345;
  return Array.from({ length: n }, () => ((x = (x * 1103515245 + 12345) & 0x7fffffff), 'abcdefghijklmnopqrstuvwxyz'[x % 26])).join('');
};
const SUBJECTS: Array<[string, string]> = [
  ['1 MB of one character ("a")', repeat('a', MB)],
  ['1 MB of one CJK character ("量", 3 bytes)', repeat('量', MB / 3)],
  ['1 MB of one digit ("7")', repeat('7', MB)],
  ['1 MB of random letters (one word)', letters(MB)],
  ['1 MB of spaces (fits: ~7,800 tokens)', repeat(' ', MB)],
  ['1 MB of words', repeat(WORDS, MB)],
  ['16 KB of words (fits)', repeat(WORDS, 16_000)],
];
/** A budget 30x the bundled model's window: how the time would grow with a model of a larger window. */
const LARGE_BUDGET = 1_000_000;

const CALLS = ['count or generate', `encode, budget ${LARGE_BUDGET.toLocaleString('en')}`] as const;

function time(content: string, call: (typeof CALLS)[number]): { ms: number; outcome: string } {
  const prompt = { model: MODEL, messages: [{ role: 'user' as const, content }] };
  // Each run tokenizes: the encoder's memo would otherwise return what the run before made.
  PromptEncoder.for(loaded.tokenizer).forget();
  const started = performance.now();
  let outcome: string;
  if (call === CALLS[1]) {
    const out = PromptEncoder.for(loaded.tokenizer).encode(content, { budget: LARGE_BUDGET });
    outcome = 'ids' in out ? `${out.ids.length} tokens` : `over budget (${out.tooLong.exact ? '' : '>= '}${out.tooLong.tokens} tokens)`;
    return { ms: performance.now() - started, outcome };
  }
  try {
    outcome = `${renderPrompt(loaded, prompt).ids.length} tokens`;
  } catch (error) {
    const { code, details } = error as { code: string; details: { promptTokens: number; promptTokensAtLeast?: boolean } };
    outcome = `${code} (${details.promptTokensAtLeast ? '>= ' : ''}${details.promptTokens} tokens)`;
  }
  return { ms: performance.now() - started, outcome };
}

const rows: Array<Array<string | number>> = [];
const data: Array<{ subject: string; call: string; medianMs: number; outcome: string }> = [];
for (const [subject, content] of SUBJECTS) {
  // count_tokens and generation render and count a prompt the same way (renderPrompt).
  for (const call of CALLS) {
    time(content, call); // warm-up: caches, and the long-word merge table (built once per worker)
    const runs = Array.from({ length: RUNS }, () => time(content, call));
    const medianMs = median(runs.map((r) => r.ms));
    rows.push([subject, call, medianMs, runs[0]!.outcome]);
    data.push({ subject, call, medianMs, outcome: runs[0]!.outcome });
    console.log(`${subject.padEnd(42)} ${call.padEnd(26)} ${medianMs.toFixed(1).padStart(8)} ms  ${runs[0]!.outcome}`);
  }
}

writeResults('tokenize', { model: MODEL, runs: RUNS, results: data }, [
  { title: `Prompt tokenization (renderPrompt, ${MODEL}, context ${loaded.info.contextLength}), median of ${RUNS}`, columns: ['prompt', 'call', 'ms', 'outcome'], rows },
]);
