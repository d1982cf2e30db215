/**
 * Two rooms on real llama.cpp contexts (src/engines/llama/layout.ts, load.ts, slots.ts): the test
 * GGUF's own KV (256 bytes a token) never makes a short room worth its compute buffer (297 MiB,
 * test/model/gguf-context.e2e.test.ts), so this test states a token's KV as 64 KiB in the model's
 * record (what the scanner writes from the metadata) and a budget of one whole sequence of 16,384
 * tokens, the short room's compute buffer and 8,192 tokens more: the real loading code lays out
 * `1 x 16384 + 2 x 4096` as two contexts, and the engine runs requests in both, the long ones one
 * after the other. (The contexts take the test model's real, small KV.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disposeLlamaModel, loadLlamaModel, type LlamaLoaded } from '../../src/engines/llama/load.js';
import { llamaEngine } from '../../src/engines/llama/runner.js';
import type { SequenceSpec } from '../../src/engines/sequence.js';
import { scanModels } from '../../src/models/registry.js';
import { testEngine } from '../helpers/engine.js';
import { GGUF_CHAT_MODEL, GGUF_MODELS_DIR } from '../helpers/paths.js';

const STATED_PER_TOKEN = 64 * 1024;
const CONTEXT = 16_384;
/** A prefill chunk's logits over the 151,936-token vocabulary, float32: the second context's compute buffer. */
const OVERHEAD = 151_936 * 512 * 4;

let loaded: LlamaLoaded;
beforeAll(async () => {
  const info = scanModels({ modelsDir: GGUF_MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === GGUF_CHAT_MODEL)!;
  const kv = { bytesPerToken: STATED_PER_TOKEN, budgetBytes: (CONTEXT + 2 * 4096) * STATED_PER_TOKEN + OVERHEAD };
  loaded = await loadLlamaModel({ ...info, contextLength: CONTEXT, maxOutputTokens: CONTEXT, gguf: { ...info.gguf!, kv } }, testEngine({ generationBatchSize: 4 }));
}, 120_000);
afterAll(async () => {
  if (loaded) await disposeLlamaModel(loaded);
});

/** A greedy sequence of `prompt` tokens that may ask for `maxTokens` and stops after 4; resolves with the tokens generated and the room it ran in. */
function run(prompt: number, maxTokens: number, first = 100) {
  const generated: number[] = [];
  const spec: SequenceSpec = {
    promptIds: Array.from({ length: prompt }, (_, i) => first + i),
    maxTokens,
    sampling: { doSample: false, temperature: 1, topK: 0, topP: 1 },
    onToken: (id) => generated.push(id) >= 4,
    cancelled: () => false,
  };
  const engine = llamaEngine(loaded);
  return (async () => {
    const prefix = await engine.lookup(spec.promptIds, spec.maxTokens);
    const room = (prefix as unknown as { slot: { size: number } }).slot.size;
    await engine.run(spec, prefix);
    return { generated, room };
  })();
}

describe('a GGUF chat model laid out in two rooms', () => {
  it('loads one context per room, and says so', () => {
    expect(loaded.layout!.rooms).toEqual([{ sequences: 1, contextSize: CONTEXT }, { sequences: 2, contextSize: 4096 }]);
    expect(loaded.contexts!.map((c) => [c.totalSequences, c.contextSize])).toEqual([[1, CONTEXT], [2, 4096]]);
    expect(loaded.notes.join(' ')).toContain(`sequences 1 x ${CONTEXT} + 2 x 4096 tokens`);
  });

  it('runs short requests in the short room and long ones, in turn, in the long room, all to their end', { timeout: 120_000 }, async () => {
    const results = await Promise.all([run(20, 8000, 100), run(20, 8000, 200), run(20, 16, 300), run(20, 16, 400)]);
    expect(results.map((r) => r.room)).toEqual([CONTEXT, CONTEXT, 4096, 4096]);
    for (const r of results) expect(r.generated).toHaveLength(4);
  });
});
