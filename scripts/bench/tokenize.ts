/**
 * Prompt tokenization time on the bundled chat model (tiny-qwen3-random: the real Qwen3 tokenizer
 * and template, context 4096), in-process through renderPrompt, the path count_tokens and
 * generation take in a worker: large prompts are refused (prompt_too_long) or counted in bounded
 * time whatever their content. Median of --runs runs after one warm-up run.
 *
 *   npm run bench:tokenize [-- --runs 5]
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBundledModels } from '../models/bundled/index.js';
import { describeModel } from '../../src/models/registry.js';
import { loadTokenizer } from '../../src/worker/load.js';
import { renderPrompt } from '../../src/worker/prompt.js';
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
// Near the most a prompt can be and still be tokenized: context x longest token (128 bytes) = 524,288 bytes.
const NEAR_CAP = 520_000;
const SUBJECTS: Array<[string, string]> = [
  ['1 MB of one character ("a")', repeat('a', MB)],
  ['1 MB of one digit ("7")', repeat('7', MB)],
  ['1 MB of words', repeat(WORDS, MB)],
  ['520 KB of one digit (a piece per byte)', repeat('7', NEAR_CAP)],
  ['520 KB of one letter (one long word)', repeat('a', NEAR_CAP)],
  ['520 KB of spaces (fits: ~4070 tokens)', repeat(' ', NEAR_CAP)],
  ['16 KB of words (fits)', repeat(WORDS, 16_000)],
];

function time(content: string): { ms: number; outcome: string } {
  const prompt = { model: MODEL, messages: [{ role: 'user' as const, content }] };
  const started = performance.now();
  let outcome: string;
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
  for (const call of ['count or generate']) {
    time(content); // warm-up: caches, and the long-word merge table (built once per worker)
    const runs = Array.from({ length: RUNS }, () => time(content));
    const medianMs = median(runs.map((r) => r.ms));
    rows.push([subject, call, medianMs, runs[0]!.outcome]);
    data.push({ subject, call, medianMs, outcome: runs[0]!.outcome });
    console.log(`${subject.padEnd(42)} ${call.padEnd(26)} ${medianMs.toFixed(1).padStart(8)} ms  ${runs[0]!.outcome}`);
  }
}

writeResults('tokenize', { model: MODEL, runs: RUNS, results: data }, [
  { title: `Prompt tokenization (renderPrompt, ${MODEL}, context ${loaded.info.contextLength}), median of ${RUNS}`, columns: ['prompt', 'call', 'ms', 'outcome'], rows },
]);
