/**
 * The llama.cpp engine (src/engines/llama/) on the GGUF test model (the bundled chat model's weights
 * with the real Qwen3 tokenizer and template in the GGUF metadata; scripts/builders/gguf/test-model.ts):
 * the tokenizer rebuilt from the metadata tokenizes as llama.cpp does, and the server answers through
 * it with real usage, forced tool calls that parse, prefix reuse that is counted, and log probabilities.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { getLlama, type LlamaModel } from 'node-llama-cpp';
import { readGgufMetadata } from '../../src/models/gguf.js';
import { tokenizerFromGguf } from '../../src/tokenize/gguf-tokenizer.js';
import { scanModels } from '../../src/models/registry.js';
import { TEST_GGUF_FILE, TEST_GGUF_RERANK_MODEL } from '../../scripts/builders/gguf/test-model.js';
import { buildSpmVocabGguf } from '../../scripts/builders/gguf/spm-vocab-gguf.js';
import { GGUF_CHAT_MODEL, GGUF_EMBED_MODEL, GGUF_EMBED_MODELS_DIR, GGUF_MODELS_DIR, ROOT } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';
import { testEngine } from '../helpers/engine.js';

const FILE = path.join(GGUF_MODELS_DIR, GGUF_CHAT_MODEL, TEST_GGUF_FILE);

describe('the tokenizer rebuilt from GGUF metadata', () => {
  let model: LlamaModel;
  beforeAll(async () => {
    const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: 'error' as never });
    model = await llama.loadModel({ modelPath: FILE });
  });
  afterAll(() => model?.dispose());

  it('gives llama.cpp\'s own tokens for text with special tokens, digits, accents, CJK, contractions and whitespace runs', () => {
    const tokenizer = tokenizerFromGguf(readGgufMetadata(FILE));
    const texts = [
      "Hello world! <|im_start|>user\n  1234 naïve 日本語 don't\n\n<think>x</think>",
      'def f(x):\n\treturn x ** 2  # square\n\n\n',
      '{"city": "Paris", "n": -12.5e3}',
      "I'LL SEE YOU'RE 😀 emoji and ¿qué? ½",
      '<tool_call>\n{"name": "get_weather"}\n</tool_call><|im_end|>',
    ];
    for (const text of texts) expect(tokenizer.encode(text, { add_special_tokens: false }), text).toEqual(model.tokenize(text, true));
  });

  /** Texts for the SentencePiece vocabularies: whitespace runs at either end, tabs, unknown characters, special tokens. */
  const SP_TEXTS = ['Hello world! How are you?', '  two  spaces and\ttabs\n\nnew lines ', 'naïve café 日本語 😀 ¿qué?', 'def f(x):\n    return x ** 2', '<start_of_turn>user\nHi<end_of_turn>', "I'LL see you're 12345.678", 'ǅ ꙮꙮ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 zzqxj', ' leading', 'trailing   ', '   '];

  /** Builds a vocabulary-only GGUF (the first 32k of Gemma 3's tokens: special, byte and common ones) and runs `check` on it with llama.cpp's model of it. */
  async function withSpmVocab(options: Omit<Parameters<typeof buildSpmVocabGguf>[1], 'vocabSize'>, check: (tokenizer: ReturnType<typeof tokenizerFromGguf>, spm: LlamaModel, unknown: number) => void): Promise<void> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spm-gguf-'));
    try {
      const file = path.join(dir, 'spm.gguf');
      buildSpmVocabGguf(file, { ...options, vocabSize: 32_000 });
      const spm = await model.llama.loadModel({ modelPath: file, vocabOnly: true });
      try {
        const metadata = readGgufMetadata(file);
        check(tokenizerFromGguf(metadata), spm, metadata.get('tokenizer.ggml.unknown_token_id') as number);
      } finally {
        await spm.dispose();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it.each([[true, 'Llama 2 and Mistral'], [false, 'Gemma']])('gives llama.cpp\'s own tokens and text for a SentencePiece BPE vocabulary, add_space_prefix %s (%s)', (addSpacePrefix) =>
    withSpmVocab({ addSpacePrefix }, (tokenizer, spm) => {
      for (const text of SP_TEXTS) {
        const ids = [...spm.tokenize(text, true)];
        expect(tokenizer.encode(text, { add_special_tokens: false }), text).toEqual(ids);
        // (Runs of spaces are user-defined tokens in this vocabulary, which llama.cpp spells with their ▁ marks.)
        if (!/^ | {2}/.test(text)) expect(tokenizer.decode(ids), text).toBe(spm.detokenize(ids as never, true));
      }
      expect(tokenizer.encode('Hi')[0]).toBe(spm.tokens.bos); // add_bos_token
    }));

  it.each([
    [true, 'T5 and XLM-RoBERTa (bge-m3): <s> text </s>'],
    [false, 'each space kept'],
  ])('gives llama.cpp\'s own tokens for a SentencePiece unigram vocabulary, remove_extra_whitespaces %s (%s)', (merge) =>
    withSpmVocab({ addSpacePrefix: true, unigram: { removeExtraWhitespaces: merge, addBos: merge, addEos: true } }, (tokenizer, spm, unknown) => {
      let unknowns = 0;
      for (const text of SP_TEXTS) {
        const ids = [...spm.tokenize(text, true)];
        unknowns += ids.filter((id) => id === unknown).length;
        expect(tokenizer.encode(text, { add_special_tokens: false }), text).toEqual(ids);
        // (Text as llama.cpp writes it back: user-defined runs of spaces keep their ▁ marks there, and
        // after a special token it keeps the next word's space; an embedding model's text is never decoded.)
        if (!/^ | {2}|</.test(text)) expect(tokenizer.decode(ids, { skip_special_tokens: true }), text).toBe(spm.detokenize(ids as never, false));
      }
      expect(unknowns).toBeGreaterThan(0); // characters no token covers: runs of them are one unknown token on both
      // The ends as an embedding input gets them: XLM-R's <s> and </s>, T5's </s>.
      expect(tokenizer.encode('Hi')).toEqual([...(merge ? [spm.tokens.bos!] : []), ...spm.tokenize('Hi'), spm.tokens.eos!]);
    }));

  it('gives llama.cpp\'s own tokens for a BERT WordPiece vocabulary: case, accents, punctuation, CJK, unknown words, [CLS] and [SEP]', async () => {
    const file = path.join(GGUF_EMBED_MODELS_DIR, TEST_GGUF_RERANK_MODEL, `${TEST_GGUF_RERANK_MODEL}-F32.gguf`);
    const tokenizer = tokenizerFromGguf(readGgufMetadata(file));
    const bert = await model.llama.loadModel({ modelPath: file });
    try {
      const texts = ['The CAT sat on the Mat.', 'where is the café?! kittens... 42x', '日本 the\tdog\n\nsleeps', 'zzqx, ¿qué? a-b_c'];
      for (const text of texts) {
        const ids = bert.tokenize(text);
        expect(new Set(ids).size, text).toBeGreaterThan(2); // not all unknown: the comparison means something
        expect(tokenizer.encode(text, { add_special_tokens: false }), text).toEqual(ids);
        // With special tokens, as an embedding input is encoded: [CLS] text [SEP], llama.cpp's bos and separator.
        expect(tokenizer.encode(text), text).toEqual([bert.tokens.bos!, ...ids, bert.tokens.sep!]);
      }
    } finally {
      await bert.dispose();
    }
  });
});

describe('a GGUF model served', () => {
  let server: RealServer;
  beforeAll(async () => {
    server = await startRealServer({ modelsDir: GGUF_MODELS_DIR, only: [GGUF_CHAT_MODEL] });
  });
  afterAll(() => server?.close());
  const anthropic = () => new Anthropic({ baseURL: server.url, apiKey: 'x', maxRetries: 0 });

  it('is found under its folder name and its quantization, and says it runs on llama.cpp', async () => {
    const { models } = scanModels({ modelsDir: GGUF_MODELS_DIR, defaultPoolSize: 1 });
    const model = models.find((m) => m.id === GGUF_CHAT_MODEL)!;
    expect(model).toMatchObject({ engine: 'llama', task: 'chat', thinking: true, aliases: [`${GGUF_CHAT_MODEL}:F32`] });
    const listed = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: Array<{ id: string; engine: string; device: string | null; context_length: number }> };
    expect(listed.data.find((m) => m.id === GGUF_CHAT_MODEL)).toMatchObject({ engine: 'llama', device: 'cpu', context_length: 32_768 });
  });

  it("runs in a process of its own that loads llama.cpp and not transformers.js (nor the onnxruntime and sharp it imports): src/tokenize/text-tokenizer.ts", async () => {
    await anthropic().messages.create({ model: GGUF_CHAT_MODEL, max_tokens: 1, messages: [{ role: 'user', content: 'Hi' }] });
    // This file's process (vitest's forks pool) and its children: the served model's process.
    const children = fs.readdirSync(`/proc/${process.pid}/task`).flatMap((tid) => fs.readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean));
    const models = children.map((pid) => fs.readFileSync(`/proc/${pid}/maps`, 'utf8')).filter((maps) => /libllama/.test(maps));
    expect(models.length).toBeGreaterThan(0);
    for (const maps of models) expect(maps).not.toMatch(/libonnxruntime|libvips|sharp-linux/);
  });

  it('answers with usage equal to count_tokens, and counts a reused prefix as cache reads', async () => {
    const params = { model: GGUF_CHAT_MODEL, max_tokens: 6, system: 'You are terse.', messages: [{ role: 'user' as const, content: 'Say hello.' }], ...{ temperature: 0 } };
    const first = await anthropic().messages.create(params);
    const count = await anthropic().messages.countTokens({ model: GGUF_CHAT_MODEL, system: params.system, messages: params.messages });
    expect(first.usage.output_tokens).toBe(6);
    expect(first.stop_reason).toBe('max_tokens');
    const second = await anthropic().messages.create(params);
    expect(second.content).toEqual(first.content); // greedy: the same text
    expect(second.usage.cache_read_input_tokens).toBe(count.input_tokens - 1);
    expect(second.usage.input_tokens + (second.usage.cache_read_input_tokens ?? 0)).toBe(count.input_tokens);
  });

  it('writes a forced tool call that parses against its schema (the grammar as a logit bias)', async () => {
    const message = await anthropic().messages.create({
      model: GGUF_CHAT_MODEL, max_tokens: 200, ...{ temperature: 1 },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city', 'days'], additionalProperties: false } }],
      tool_choice: { type: 'tool', name: 'get_weather' },
    });
    expect(message.stop_reason).toBe('tool_use');
    const call = message.content.find((b) => b.type === 'tool_use')!;
    expect(call).toMatchObject({ type: 'tool_use', name: 'get_weather' });
    const input = call.input as { city: string; days: number };
    expect(typeof input.city).toBe('string');
    expect(Number.isInteger(input.days) && input.days >= 1 && input.days <= 7).toBe(true);
  });

  it('reports log probabilities of the model\'s distribution, and a seed repeats a sampled answer', async () => {
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const body = { model: GGUF_CHAT_MODEL, max_tokens: 5, messages: [{ role: 'user' as const, content: 'Count to three.' }], logprobs: true, top_logprobs: 3, seed: 7, temperature: 1 };
    const a = await openai.chat.completions.create(body);
    const b = await openai.chat.completions.create(body);
    expect(a.choices[0]!.message.content).toBe(b.choices[0]!.message.content);
    const entries = a.choices[0]!.logprobs!.content!;
    expect(entries).toHaveLength(5);
    for (const entry of entries) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.top_logprobs[0]!.logprob).toBeGreaterThanOrEqual(entry.top_logprobs[2]!.logprob);
      expect(entry.logprob).toBeLessThanOrEqual(entry.top_logprobs[0]!.logprob + 1e-6);
    }
    const seeded = { model: GGUF_CHAT_MODEL, max_tokens: 8, messages: [{ role: 'user' as const, content: 'Tell me a story.' }], seed: 11, temperature: 1 };
    const c = await openai.chat.completions.create(seeded);
    const d = await openai.chat.completions.create(seeded);
    expect(c.choices[0]!.message.content).toBe(d.choices[0]!.message.content);
  });

  it('six requests sent together with one ~2k-token system prompt: one prefills it, the five others read exactly what they share with it (its state copied)', { timeout: 120_000 }, async () => {
    const system = Array.from({ length: 200 }, (_, i) => `Rule ${i}: keep each edit small.`).join(' ');
    const ask = (k: number) => anthropic().messages.create({ model: GGUF_CHAT_MODEL, max_tokens: 8, system, messages: [{ role: 'user', content: `Task ${k}: fix module ${k}.` }], ...{ temperature: 0 } });
    const tasks = [0, 1, 2, 3, 4, 5];
    const together = await Promise.all(tasks.map(ask));
    // What any two of these prompts share (they differ from "Task <digit>" on): a seventh, alone, reads it.
    const shared = (await ask(9)).usage.cache_read_input_tokens!;
    expect(shared).toBeGreaterThan(1500);
    expect(together.map((r) => r.usage.cache_read_input_tokens ?? 0).sort((a, b) => a - b)).toEqual([0, shared, shared, shared, shared, shared]);
    // Greedy output is compared with each prompt decoded alone at the engine level
    // (test/model/shared-prefix.test.ts), not here: llama.cpp's batched decoding is not bit-exact
    // across batch compositions, so on this random-weight model six requests decoded together may
    // part from their solo output after several tokens with or without a shared prefix (measured
    // before the shared prefix existed: 16 tokens, 4 of 6 differed from the 8th token on, in one
    // run of two).
  });

  it("an agent's next turn, tens of tokens after a long kept prefix, re-evaluates the prefix's tail to make the pass llama.cpp's attention tile, and counts only what it kept", { timeout: 120_000 }, async () => {
    // src/engines/llama/attention-tile.ts: on this model, 2 layers, a pass of ~30 new tokens after
    // ~4k kept costs more in the one-row kernel than a pass of 64 in the tiled one.
    const system = Array.from({ length: 400 }, (_, i) => `Rule ${i}: keep each edit small.`).join(' ');
    const first = [{ role: 'user' as const, content: 'Start the refactor.' }];
    const next = [...first, { role: 'assistant' as const, content: 'Step 1 is done: the files are read.' }, { role: 'user' as const, content: 'Go on with step 2.' }];
    const ask = (messages: typeof next) => anthropic().messages.create({ model: GGUF_CHAT_MODEL, max_tokens: 1, system, messages, ...{ temperature: 0 } });
    const count = async (messages: typeof next) => (await anthropic().messages.countTokens({ model: GGUF_CHAT_MODEL, system, messages })).input_tokens;
    await ask(first);
    const [before, after] = [await count(first), await count(next)];
    expect(after - before).toBeGreaterThan(16);
    expect(after - before).toBeLessThan(64);
    const turn = await ask(next);
    expect(turn.usage.cache_read_input_tokens).toBe(after - 64);
    expect(turn.usage.input_tokens).toBe(64);
    // The same prompt again: one new token (the last, for its logits), no cut.
    expect((await ask(next)).usage.cache_read_input_tokens).toBe(after - 1);
  });

  it('decodes concurrent requests together', async () => {
    const results = await Promise.all(Array.from({ length: 4 }, (_, i) => anthropic().messages.create({ model: GGUF_CHAT_MODEL, max_tokens: 12, messages: [{ role: 'user', content: `Request ${i}` }], ...{ temperature: 0 } })));
    for (const r of results) expect(r.usage.output_tokens).toBe(12);
  });
});

describe('a GGUF model with the prompt cache off', () => {
  let server: RealServer;
  beforeAll(async () => {
    server = await startRealServer({ modelsDir: GGUF_MODELS_DIR, only: [GGUF_CHAT_MODEL], promptCacheBytes: 0 });
  });
  afterAll(() => server?.close());

  it('reuses no sequence\'s KV (PROMPT_CACHE_BYTES=0): a repeated prompt is prefilled whole, as on the ONNX engine', async () => {
    const client = new Anthropic({ baseURL: server.url, apiKey: 'unused' });
    const params = { model: GGUF_CHAT_MODEL, max_tokens: 2, messages: [{ role: 'user' as const, content: 'Say hello.' }], ...{ temperature: 0 } };
    const first = await client.messages.create(params);
    const second = await client.messages.create(params);
    expect(second.usage.cache_read_input_tokens ?? 0).toBe(0);
    expect(second.usage.input_tokens).toBe(first.usage.input_tokens);
  });
});

describe.skipIf(process.platform !== 'linux')('a GGUF model with ggufProcess off', () => {
  let server: RealServer;
  beforeAll(async () => {
    server = await startRealServer({ modelsDir: GGUF_MODELS_DIR, only: [GGUF_CHAT_MODEL], ggufProcess: false });
  });
  afterAll(() => server?.close());

  it('is served from a worker thread of the server\'s: no model process', async () => {
    const client = new Anthropic({ baseURL: server.url, apiKey: 'unused' });
    const message = await client.messages.create({ model: GGUF_CHAT_MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] });
    expect(message.usage.output_tokens).toBe(2);
    const children = fs.readdirSync(`/proc/${process.pid}/task`).flatMap((tid) => fs.readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean));
    expect(children.filter((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('process-entry'))).toEqual([]);
  });
});

describe('a GGUF embedding model served', () => {
  let server: RealServer;
  let model: LlamaModel;
  beforeAll(async () => {
    server = await startRealServer({ modelsDir: GGUF_EMBED_MODELS_DIR });
    const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: 'error' as never });
    model = await llama.loadModel({ modelPath: path.join(GGUF_EMBED_MODELS_DIR, GGUF_EMBED_MODEL, `${GGUF_EMBED_MODEL}-F32.gguf`) });
  });
  afterAll(async () => {
    await server?.close();
    await model?.dispose();
  });

  it('answers the embeddings route with llama.cpp\'s pooled vectors, normalised, and real usage', async () => {
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const input = ['The cat sat on the mat.', 'A kitten rested on the rug.', 'Stocks rose today.'];
    const response = await openai.embeddings.create({ model: GGUF_EMBED_MODEL, input, encoding_format: 'float' });
    expect(response.data).toHaveLength(3);
    const context = await model.createEmbeddingContext({ contextSize: 512 });
    try {
      for (const [i, text] of input.entries()) {
        const vector = response.data[i]!.embedding;
        expect(vector).toHaveLength(64);
        const direct = (await context.getEmbeddingFor(model.tokenize(text))).vector;
        const norm = Math.hypot(...direct);
        direct.forEach((v, d) => expect(vector[d]!).toBeCloseTo(v / norm, 4));
      }
    } finally {
      await context.dispose();
    }
    const count = input.reduce((n, text) => n + model.tokenize(text).length, 0);
    expect(response.usage.prompt_tokens).toBe(count);
  });
});

describe('a GGUF cross-encoder served', () => {
  let server: RealServer;
  let model: LlamaModel;
  beforeAll(async () => {
    server = await startRealServer({ modelsDir: GGUF_EMBED_MODELS_DIR, only: [TEST_GGUF_RERANK_MODEL] });
    const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: 'error' as never });
    model = await llama.loadModel({ modelPath: path.join(GGUF_EMBED_MODELS_DIR, TEST_GGUF_RERANK_MODEL, `${TEST_GGUF_RERANK_MODEL}-F32.gguf`) });
  });
  afterAll(async () => {
    await server?.close();
    await model?.dispose();
  });
  const rerank = (body: Record<string, unknown>) =>
    fetch(`${server.url}/v1/rerank`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: TEST_GGUF_RERANK_MODEL, ...body }) });

  it('is listed as a rerank model on llama.cpp', async () => {
    const listed = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: Array<{ id: string; task: string; engine: string }> };
    expect(listed.data.find((m) => m.id === TEST_GGUF_RERANK_MODEL)).toMatchObject({ task: 'rerank', engine: 'llama' });
  });

  it('scores each pair as node-llama-cpp ranks it directly, sorted, with usage equal to the tokens llama.cpp evaluated', async () => {
    const query = 'where is the cat?';
    const documents = ['the cat sat on the mat.', 'the bank rates won the final.', 'a kittens sleeps by the window', 'quantum computer'];
    const res = await rerank({ query, documents, return_documents: true });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { results: Array<{ index: number; relevance_score: number; document: { text: string } }>; usage: { total_tokens: number } };
    expect(body.results.map((r) => r.relevance_score)).toEqual([...body.results.map((r) => r.relevance_score)].sort((a, b) => b - a));
    const ranking = await model.createRankingContext({ contextSize: 128 });
    try {
      const direct = await ranking.rankAll(query, documents);
      const logit = (p: number) => Math.log(p / (1 - p));
      expect(new Set(direct.map((p) => logit(p).toFixed(2))).size).toBe(documents.length); // the pairs score differently: the comparison means something
      for (const result of body.results) {
        expect(result.document.text).toBe(documents[result.index]);
        expect(result.relevance_score).toBeCloseTo(direct[result.index]!, 8);
      }
      // TEI's shape on /rerank gives the raw logits: llama.cpp's, to float precision.
      const tei = await fetch(`${server.url}/rerank`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: TEST_GGUF_RERANK_MODEL, query, texts: documents, raw_scores: true }) });
      expect(tei.status).toBe(200);
      for (const { index, score } of (await tei.json()) as Array<{ index: number; score: number }>) expect(score).toBeCloseTo(logit(direct[index]!), 4);
      const tokens = documents.reduce((n, d) => n + ranking.calculateInputLength(model.tokenize(query), model.tokenize(d)), 0);
      expect(body.usage.total_tokens).toBe(tokens);
    } finally {
      await ranking.dispose();
    }
  });

  it('cuts only the document to the context (max_tokens_per_doc too), and refuses a query that leaves no room, naming it', async () => {
    const long = Array.from({ length: 200 }, () => 'cat').join(' ');
    const cut = await rerank({ query: 'cat', documents: [long], max_tokens_per_doc: 5 });
    expect(cut.status).toBe(200);
    // [CLS] cat [SEP] and the document's first 5 tokens.
    expect(((await cut.json()) as { usage: { total_tokens: number } }).usage.total_tokens).toBe(3 + 5);
    const refused = await rerank({ query: long, documents: ['cat'] });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/^query is \d+ tokens/);
  });
});

describe('a GPU backend asked for but absent', () => {
  it.skipIf(process.platform === 'darwin')('fails the load with a message that names the setting and the way back to the CPU, not a crash', async () => {
    const { loadLlamaModel } = await import('../../src/engines/llama/load.js');
    const info = scanModels({ modelsDir: GGUF_MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === GGUF_CHAT_MODEL)!;
    // This machine has no CUDA device (CI's has none either); where one is present the load succeeds and this says so.
    const outcome = await loadLlamaModel(info, testEngine({ gpu: 'cuda' })).then(
      (loaded) => ({ ok: true as const, device: loaded.device }),
      (error: Error) => ({ ok: false as const, message: error.message }),
    );
    if (outcome.ok) expect(outcome.device).toMatch(/^cuda/);
    else expect(outcome.message).toMatch(/^gpu=cuda: llama\.cpp's cuda backend did not load on this machine \(.+\); set gpu=false to run on the CPU$/s);
  });
});

describe('a GGUF model whose process dies', () => {
  let server: RealServer;
  beforeAll(async () => {
    server = await startRealServer({ modelsDir: GGUF_MODELS_DIR, only: [GGUF_CHAT_MODEL], faults: true });
  });
  afterAll(() => server?.close());

  const chat = (content: string) =>
    fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: GGUF_CHAT_MODEL, max_tokens: 3, temperature: 0, messages: [{ role: 'user', content }] }),
    });

  // `abort` ends the whole process the worker thread is in, as a crash in llama.cpp's native code
  // does: GGUF models run in a child process of their own (src/pool/process-pool.ts), so it is that
  // process, not the server (this test's own process), that goes.
  it('fails only the request it was serving, is counted once, and a new process serves the next', async () => {
    const res = await chat('[fault:abort] Hello');
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.stringMatching(/restarted/) } });
    for (let waited = 0; !server.service.status().models[0]!.ready; waited += 50) {
      expect(waited).toBeLessThan(60_000);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await chat('Hello')).status).toBe(200);
    expect(server.service.status().models[0]!.workerRestarts).toBe(1);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(String.raw`worker_restarts_total\{model="${GGUF_CHAT_MODEL}",reason="crashed"\} 1`));
  });
});

describe.skipIf(process.platform !== 'linux')('the server process and its GGUF model\'s process', () => {
  /** Every process under `pid` (Linux /proc), with its command line. */
  const descendants = (pid: number): Array<{ pid: number; cmd: string }> =>
    fs.readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
        .flatMap((child) => [{ pid: child, cmd: fs.readFileSync(`/proc/${child}/cmdline`, 'utf8') }, ...descendants(child)]));
  const alive = (pid: number) => fs.existsSync(`/proc/${pid}`) && !/State:\s+Z/.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  const until = async (done: () => boolean, what: string) => {
    for (let waited = 0; !done(); waited += 50) {
      if (waited > 20_000) throw new Error(`not within 20 s: ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  /** src/main.ts serving the GGUF model, loaded at start; resolves once a chat request has been answered. */
  async function serve(): Promise<{ server: ChildProcess; model: number }> {
    const server = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts'), '--models-dir', GGUF_MODELS_DIR, '--port', '0', '--log-level', 'warn', '--preload', GGUF_CHAT_MODEL], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const url = await new Promise<string>((resolve, reject) => {
      server.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(stderr);
        if (match) resolve(match[1]!);
      });
      server.once('exit', (code) => reject(new Error(`exited with ${code}: ${stderr}`)));
    });
    const res = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: GGUF_CHAT_MODEL, max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] }) });
    expect(res.status).toBe(200);
    const models = descendants(server.pid!).filter((p) => p.cmd.includes('process-entry'));
    expect(models).toHaveLength(1);
    return { server, model: models[0]!.pid };
  }

  it('shuts its model\'s process down with it on SIGTERM, and exits 0', async () => {
    const { server, model } = await serve();
    const exited = new Promise<number | null>((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    expect(await exited).toBe(0);
    await until(() => !alive(model), 'the model process ends');
  }, 90_000);

  it('leaves no model process behind when it is killed outright', async () => {
    const { server, model } = await serve();
    server.kill('SIGKILL');
    // The model process sees its channel to the server close and ends itself.
    await until(() => !alive(model), 'the model process ends');
  }, 90_000);
});
