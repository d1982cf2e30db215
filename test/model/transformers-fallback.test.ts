/**
 * The transformers.js generate path (src/engines/onnx/runner.ts), taken by exports the batch decoder
 * cannot drive, gives what the batch decoder gives: the same greedy tokens, penalties, thinking's
 * forced tags and budget (logits masks), and log probabilities. Here the bundled model is forced onto
 * that path in this process (supportsBatchDecoding mocked to false; its export's own attention, as
 * such exports have: a fused graph has no present.* outputs for generate), and compared with the same
 * requests served by real workers, which decode it in batches.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ChatRequest, ChatResult } from '../../src/core/types.js';
import { scanModels } from '../../src/models/registry.js';
import { TaskControl } from '../../src/worker/protocol.js';
import { loadModel, type LoadedModel } from '../../src/engines/onnx/load.js';
import { runChatTask } from '../../src/worker/chat-task.js';
import { onnxEngine } from '../../src/engines/onnx/runner.js';
import { CHAT_MODEL, MODELS_DIR } from '../helpers/paths.js';
import { startRealService, type RealService } from '../helpers/real-service.js';
import { testEngine } from '../helpers/engine.js';

vi.mock('../../src/engines/onnx/decode/session-info.js', async (original) => ({ ...(await original<typeof import('../../src/engines/onnx/decode/session-info.js')>()), supportsBatchDecoding: () => false }));

let loaded: LoadedModel;
let service: RealService;

beforeAll(async () => {
  const info = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === CHAT_MODEL)!;
  loaded = await loadModel(info, testEngine({ fusedAttention: false, ortAllowSpinning: false }));
  service = await startRealService({ only: [CHAT_MODEL] });
});
afterAll(() => service?.close());

const request = (overrides: Partial<ChatRequest> = {}): ChatRequest => ({
  model: CHAT_MODEL, messages: [{ role: 'user', content: 'Name three rivers and a sea.' }], maxTokens: 16, sampling: { temperature: 0 }, stopStrings: [], logprobs: 2, ...overrides,
});

async function fallback(req: ChatRequest): Promise<ChatResult> {
  return (await runChatTask(loaded, req, { engine: onnxEngine(loaded), control: new Int32Array(new SharedArrayBuffer(TaskControl.BYTES)) })).result;
}

const ids = (result: ChatResult) => result.logprobs!.map((l) => l.token);

describe('transformers.js generate serves what the batch decoder serves', () => {
  it.each([
    ['greedy', {}],
    ['presence and frequency penalties', { sampling: { temperature: 0, presencePenalty: 1.5, frequencyPenalty: 0.7 } }],
    ['a repetition penalty', { sampling: { temperature: 0, repetitionPenalty: 1.8 } }],
    ['a huge negative frequency penalty (by construction: the first token again and again)', { sampling: { temperature: 0, frequencyPenalty: -1e4 } }],
    ['thinking with a budget (forced tags: logits masks)', { thinking: { enabled: true, budgetTokens: 5 }, maxTokens: 20 }],
  ] as Array<[string, Partial<ChatRequest>]>)('%s', async (_name, overrides) => {
    const batched = await service.chat(request(overrides));
    const single = await fallback(request(overrides));
    expect(ids(single)).toEqual(ids(batched));
    expect(single.parts).toEqual(batched.parts);
    expect(single.finish).toBe(batched.finish);
    // Log probabilities are the model's own (before penalties), on both paths.
    single.logprobs!.forEach((entry, i) => {
      expect(entry.logprob).toBeCloseTo(batched.logprobs![i]!.logprob, 4);
      expect(entry.top.map((t) => t.token)).toEqual(batched.logprobs![i]!.top.map((t) => t.token));
    });
  });

  it('a repetition penalty from generation_config applies unless the request sets one', async () => {
    const withDefault = { ...loaded, generationDefaults: { ...loaded.generationDefaults, repetitionPenalty: 1e4 } };
    const result = await runChatTask(withDefault, request({ maxTokens: 24 }), { engine: onnxEngine(withDefault), control: new Int32Array(new SharedArrayBuffer(TaskControl.BYTES)) });
    // Every prompt and generated token is divided down (or multiplied away): no token repeats.
    expect(ids(result.result).length).toBeGreaterThan(1);
    expect(ids(result.result)).toHaveLength(result.result.outputTokens - (result.result.finish === 'eos' ? 1 : 0));
    expect(new Set(ids(result.result)).size).toBe(ids(result.result).length);
    const overridden = await runChatTask(withDefault, request({ sampling: { temperature: 0, repetitionPenalty: 1 } }), { engine: onnxEngine(withDefault), control: new Int32Array(new SharedArrayBuffer(TaskControl.BYTES)) });
    expect(ids(overridden.result)).toEqual(ids(await fallback(request())));
  });
});
