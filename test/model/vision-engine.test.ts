/**
 * The bundled vision model (tiny-qwen3-vl-random) on our ONNX engine: the prompt rendered by its own
 * template with each image widened to its tokens (the counts worked out by hand in
 * vision-model.test.ts: 300x200 -> 70, 500x333 -> 160), the batch decoder fed inputs_embeds and
 * M-RoPE positions (greedy tokens equal transformers.js's own Qwen3VLForConditionalGeneration
 * generate on the same inputs, alone and in a batch; our decoder graph rewritten to last-position logits), and the prefix cache keyed by the images' bytes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoProcessor, cat, Qwen3VLForConditionalGeneration, RawImage, Tensor, type Processor } from '@huggingface/transformers';
import { scanModels } from '../../src/models/registry.js';
import { disposeModel, loadModel, type LoadedModel } from '../../src/engines/onnx/load.js';
import { flushPromptCache, onnxEngine } from '../../src/engines/onnx/runner.js';
import { renderPrompt } from '../../src/chat/prompt.js';
import type { ChatImage, ChatPrompt } from '../../src/core/types.js';
import type { SequenceEngine, SequenceImage } from '../../src/engines/sequence.js';
import { MODELS_DIR, VISION_MODEL } from '../helpers/paths.js';
import { testEngine } from '../helpers/engine.js';
import { GREEDY, greedyTokens, png } from '../helpers/vision.js';

const MAX_TOKENS = 6;

let loaded: LoadedModel;
let engine: SequenceEngine;
let processor: Processor;
let reference: Awaited<ReturnType<typeof Qwen3VLForConditionalGeneration.from_pretrained>>;
let small: ChatImage;
let wide: ChatImage;
let smallOther: ChatImage;

beforeAll(async () => {
  const info = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === VISION_MODEL)!;
  loaded = await loadModel(info, testEngine({ ortAllowSpinning: false, prefillChunkTokens: 64 }));
  engine = onnxEngine(loaded);
  processor = await AutoProcessor.from_pretrained(VISION_MODEL, { local_files_only: true });
  reference = await Qwen3VLForConditionalGeneration.from_pretrained(VISION_MODEL, { dtype: 'fp32', local_files_only: true });
  [small, wide, smallOther] = await Promise.all([png(300, 200), png(500, 333), png(300, 200, 7)]);
}, 60_000);

afterAll(async () => {
  await reference?.dispose();
  if (loaded) await disposeModel(loaded);
});

const ask = (text: string, images: ChatImage[], offset = 0): ChatPrompt => ({ model: VISION_MODEL, messages: [{ role: 'user', content: text, images: images.map((image) => ({ ...image, offset })) }] });

/** Our engine's greedy tokens for a rendered prompt (stopping at the model's end, as generate does). */
const ours = (ids: number[], images: SequenceImage[] | undefined, on = engine) => greedyTokens(on, loaded.eosTokenIds, ids, images, MAX_TOKENS);

/** transformers.js's own greedy generate on the same ids, each image through the processor alone. */
async function theirs(ids: number[], images: ChatImage[]): Promise<number[]> {
  const imageProcessor = processor.image_processor!;
  const processed = await Promise.all(images.map(async (image) => imageProcessor(await RawImage.fromBlob(new Blob([image.bytes as Uint8Array<ArrayBuffer>])))));
  const inputs = {
    input_ids: new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
    attention_mask: new Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]),
    ...(images.length ? { pixel_values: cat(processed.map((p) => p.pixel_values as Tensor), 0), image_grid_thw: cat(processed.map((p) => p.image_grid_thw as Tensor), 0) } : {}),
  };
  const out = (await reference.generate({ ...inputs, max_new_tokens: MAX_TOKENS, do_sample: false } as never)) as Tensor;
  return (out.tolist() as bigint[][])[0]!.map(Number).slice(ids.length);
}

describe('the vision model on the ONNX engine', () => {
  it('renders an image as its tokens between the vision markers: the processor\'s own prompt, 70 and 160 image tokens as counted by hand', async () => {
    const text = renderPrompt(loaded, ask('What is in the picture?', []));
    for (const [image, tokens] of [[small, 70], [wide, 160]] as const) {
      const prompt = renderPrompt(loaded, ask('What is in the picture?', [image]));
      // Image first (offset 0), as the processor's template renders [{image}, {text}].
      const processed = await processor(processor.apply_chat_template([{ role: 'user', content: [{ type: 'image' }, { type: 'text', text: 'What is in the picture?' }] }] as never, { add_generation_prompt: true, enable_thinking: false } as never) as unknown as string, await RawImage.fromBlob(new Blob([image.bytes as Uint8Array<ArrayBuffer>])));
      expect(prompt.ids).toEqual((processed.input_ids as Tensor).tolist()[0]!.map(Number));
      // The text prompt plus the markers (2 tokens) and the image's tokens.
      expect(prompt.ids.length).toBe(text.ids.length + 2 + tokens);
      expect(prompt.images).toHaveLength(1);
      expect(prompt.images![0]).toMatchObject({ length: tokens });
    }
  });

  it('places images at their offsets in the text, several per message and across turns, a tool result\'s included', () => {
    const prompt = renderPrompt(loaded, {
      model: VISION_MODEL,
      messages: [
        { role: 'user', content: 'Compare A and B', images: [{ ...small, offset: 8 }, { ...wide, offset: 15 }] },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'shot', input: {} }] },
        { role: 'tool', content: 'the screen', callId: 'c1', name: 'shot', images: [{ ...small, offset: 0 }] },
      ],
      tools: [{ name: 'shot', inputSchema: { type: 'object', properties: {} } }],
    });
    expect(prompt.text).toContain('<|im_start|>user\nCompare <|vision_start|><|image_pad|><|vision_end|>A and B<|vision_start|><|image_pad|><|vision_end|><|im_end|>');
    expect(prompt.text).toContain('<tool_response>\n<|vision_start|><|image_pad|><|vision_end|>the screen\n</tool_response>');
    expect(prompt.images!.map((i) => i.length)).toEqual([70, 160, 70]);
    const pad = loaded.vision!.spec.imageTokenId;
    for (const image of prompt.images!) {
      expect(prompt.ids.slice(image.start, image.start + image.length).every((id) => id === pad)).toBe(true);
      expect(prompt.ids[image.start - 1]).toBe(loaded.vision!.spec.visionStartTokenId);
      expect(prompt.ids[image.start + image.length]).not.toBe(pad);
    }
    expect(prompt.ids.filter((id) => id === pad)).toHaveLength(300);
  });

  it('images count against the context: two 4096x4096 images (16,384 tokens each) leave a 32,768-token window no room', () => {
    // Rendering reads the images' sizes only (the bytes are never decoded here).
    const big = { ...small, width: 4096, height: 4096 };
    let error: unknown;
    try {
      renderPrompt(loaded, ask('Two big ones', [big, big]));
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'prompt_too_long', details: { limit: 32768 } });
    expect((error as { details: { promptTokens: number } }).details.promptTokens).toBeGreaterThanOrEqual(2 * 16384);
    expect(renderPrompt(loaded, ask('One big one', [big])).images![0]!.length).toBe(16384);
  });

  it('greedy tokens equal transformers.js generate on the same inputs: one image, two images of different sizes', async () => {
    // The decoder computes the last position's logits alone (the rewrite the text models get), and still agrees.
    expect(loaded.notes).toContain('logits for the last position only');
    for (const images of [[small], [small, wide]]) {
      const prompt = renderPrompt(loaded, ask('Describe', images));
      const expected = await theirs(prompt.ids, images);
      expect(expected.length).toBeGreaterThan(0);
      expect((await ours(prompt.ids, prompt.images)).tokens).toEqual(expected);
    }
  }, 120_000);

  it('a text prompt: the same first token as transformers.js (its later ones sit elsewhere: see below)', async () => {
    // transformers.js 4.3.1's _get_text_only_rope_index adds the prompt's length to the decoding
    // positions' offset where Python transformers' get_rope_index subtracts it (max + 1 - length,
    // 0 for text), so its later tokens of a text prompt sit 2n positions on; ours decode at n, n+1, ...
    const prompt = renderPrompt(loaded, ask('Describe', []));
    const expected = await theirs(prompt.ids, []);
    const got = (await ours(prompt.ids, undefined)).tokens;
    expect(got[0]).toBe(expected[0]);
  }, 120_000);

  it('decodes image prompts in one batch with a text prompt, each as it decodes alone', async () => {
    const prompts = [ask('One', [small]), ask('Two', [wide]), ask('Three', [])].map((p) => renderPrompt(loaded, p));
    const alone = [];
    for (const p of prompts) alone.push((await ours(p.ids, p.images)).tokens);
    const together = await Promise.all(prompts.map((p) => ours(p.ids, p.images)));
    expect(together.map((t) => t.tokens)).toEqual(alone);
  }, 120_000);

  it('a repeated image is a cache read; a different image of the same size is not, past the token before it', async () => {
    const first = renderPrompt(loaded, ask('Cache me', [small]));
    const again = renderPrompt(loaded, { model: VISION_MODEL, messages: [{ role: 'user', content: 'Cache me', images: [{ ...small, offset: 0 }] }] });
    const other = renderPrompt(loaded, ask('Cache me', [smallOther]));
    // Same size, same tokens: only the bytes tell them apart.
    expect(other.ids).toEqual(first.ids);
    const cold = await ours(first.ids, first.images);
    const warm = await ours(again.ids, again.images);
    expect(warm.cached).toBe(first.ids.length - 1);
    expect(warm.tokens).toEqual(cold.tokens);
    const different = await ours(other.ids, other.images);
    expect(different.cached).toBeLessThan(first.images![0]!.start);
    expect(different.tokens).toEqual(await theirs(other.ids, [smallOther]));
  }, 120_000);

  it('the prompt cache on disk: a fresh load reads a repeated image\'s prefix from its file, and not a same-size other image\'s', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vision-prompt-cache-'));
    const settings = testEngine({ ortAllowSpinning: false, promptCacheDir: dir, promptCacheDiskBytes: 64 << 20, promptCacheMinTokens: 16 });
    const info = loaded.info;
    const prompt = renderPrompt(loaded, ask('On disk', [wide]));
    const other = renderPrompt(loaded, ask('On disk', [await png(500, 333, 9)]));
    try {
      const writer = await loadModel(info, settings);
      const cold = await ours(prompt.ids, prompt.images, onnxEngine(writer));
      await flushPromptCache(writer);
      await disposeModel(writer);
      const reader = await loadModel(info, settings);
      try {
        const warm = await ours(prompt.ids, prompt.images, onnxEngine(reader));
        expect(warm.cached).toBe(prompt.ids.length - 1);
        expect(warm.tokens).toEqual(cold.tokens);
        expect((await ours(other.ids, other.images, onnxEngine(reader))).cached).toBeLessThan(prompt.images![0]!.start);
      } finally {
        await disposeModel(reader);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a vision decoder whose inputs the batch decoder does not drive is model_unavailable with the reason, not an internal error', async () => {
    const decoder = (loaded.model as unknown as { sessions: Record<string, { inputNames: string[] }> }).sessions.decoder_model_merged!;
    const odd = { ...loaded, model: { config: loaded.model.config, sessions: { decoder_model_merged: { ...decoder, inputNames: [...decoder.inputNames, 'num_logits_to_keep'], outputNames: (decoder as unknown as { outputNames: string[] }).outputNames } } } } as unknown as LoadedModel;
    const prompt = renderPrompt(loaded, ask('x', [small]));
    const error = await onnxEngine(odd).run({ promptIds: prompt.ids, images: prompt.images!, maxTokens: 1, sampling: GREEDY, cancelled: () => false, onToken: () => true }).then(() => undefined, (e: unknown) => e);
    expect(error).toMatchObject({ code: 'model_unavailable', details: { model: VISION_MODEL } });
    expect((error as Error).message).toContain('inputs add num_logits_to_keep');
  });
});
