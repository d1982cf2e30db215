/**
 * The bundled Gemma 3-shaped vision model (tiny-gemma3-vl-random) on our ONNX engine: the prompt
 * rendered by Gemma 3's own template and widened as Gemma3Processor widens it (each image 16 soft
 * tokens between <start_of_image> and <end_of_image>, with blank lines around them), the batch
 * decoder fed inputs_embeds and 1-D positions from 1 (greedy tokens equal transformers.js's own
 * Gemma3ForConditionalGeneration generate on the same inputs), and the prefix cache keyed by the
 * images' bytes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoProcessor, cat, Gemma3ForConditionalGeneration, RawImage, Tensor, type Processor } from '@huggingface/transformers';
import { scanModels } from '../../src/models/registry.js';
import { disposeModel, loadModel, type LoadedModel } from '../../src/engines/onnx/load.js';
import { onnxEngine } from '../../src/engines/onnx/runner.js';
import { renderPrompt } from '../../src/chat/prompt.js';
import type { ChatImage, ChatPrompt } from '../../src/core/types.js';
import type { SequenceEngine, SequenceImage } from '../../src/engines/sequence.js';
import { GEMMA_VISION_MODEL, MODELS_DIR } from '../helpers/paths.js';
import { testEngine } from '../helpers/engine.js';
import { greedyTokens, png } from '../helpers/vision.js';

const MODEL = GEMMA_VISION_MODEL;
const MAX_TOKENS = 6;
/** Gemma 3's ids (its tokenizer.json): <start_of_image>, <end_of_image>, <image_soft_token>, "\n\n", "\n\n\n". */
const BOI = 255999;
const EOI = 256000;
const SOFT = 262144;
const NL2 = 108;
const NL3 = 109;

let loaded: LoadedModel;
let engine: SequenceEngine;
let processor: Processor;
let reference: Awaited<ReturnType<typeof Gemma3ForConditionalGeneration.from_pretrained>>;
let small: ChatImage;
let wide: ChatImage;
let smallOther: ChatImage;

beforeAll(async () => {
  const info = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === MODEL)!;
  loaded = await loadModel(info, testEngine({ ortAllowSpinning: false, prefillChunkTokens: 16 }));
  engine = onnxEngine(loaded);
  processor = await AutoProcessor.from_pretrained(MODEL, { local_files_only: true });
  reference = await Gemma3ForConditionalGeneration.from_pretrained(MODEL, { dtype: 'fp32', local_files_only: true });
  [small, wide, smallOther] = await Promise.all([png(300, 200), png(500, 333), png(300, 200, 7)]);
}, 120_000);

afterAll(async () => {
  await reference?.dispose();
  if (loaded) await disposeModel(loaded);
});

const ask = (text: string, images: ChatImage[], offset = 0): ChatPrompt => ({ model: MODEL, messages: [{ role: 'user', content: text, images: images.map((image) => ({ ...image, offset })) }] });

/** Our engine's greedy tokens for a rendered prompt (stopping at the model's end, as generate does). */
const ours = (ids: number[], images: SequenceImage[] | undefined, on = engine) => greedyTokens(on, loaded.eosTokenIds, ids, images, MAX_TOKENS);

/** transformers.js's own greedy generate on the same ids and images (pixel_values stacked, as Gemma3Processor makes them). */
async function theirs(ids: number[], images: ChatImage[]): Promise<number[]> {
  const imageProcessor = processor.image_processor!;
  const processed = await Promise.all(images.map(async (image) => imageProcessor(await RawImage.fromBlob(new Blob([image.bytes as Uint8Array<ArrayBuffer>])))));
  const inputs = {
    input_ids: new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
    attention_mask: new Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]),
    ...(images.length ? { pixel_values: cat(processed.map((p) => p.pixel_values as Tensor), 0) } : {}),
  };
  const out = (await reference.generate({ ...inputs, max_new_tokens: MAX_TOKENS, do_sample: false } as never)) as Tensor;
  return (out.tolist() as bigint[][])[0]!.map(Number).slice(ids.length);
}

describe('the Gemma 3-shaped vision model on the ONNX engine', () => {
  it("renders an image as Gemma3Processor does: 16 soft tokens between the markers (processor_config.json's image_seq_length), 19 tokens over the text prompt", async () => {
    const text = renderPrompt(loaded, ask('What is in the picture?', []));
    for (const image of [small, wide]) {
      const prompt = renderPrompt(loaded, ask('What is in the picture?', [image]));
      const rendered = processor.apply_chat_template([{ role: 'user', content: [{ type: 'image' }, { type: 'text', text: 'What is in the picture?' }] }] as never, { add_generation_prompt: true } as never) as unknown as string;
      // The rendered template starts with <bos>: no second one from the tokenizer (as transformers' apply_chat_template tokenizes it).
      const processed = await processor(rendered, await RawImage.fromBlob(new Blob([image.bytes as Uint8Array<ArrayBuffer>])), { add_special_tokens: false });
      expect(prompt.ids).toEqual((processed.input_ids as Tensor).tolist()[0]!.map(Number));
      // By hand, whatever the image's size (every image is resized to 64x64): the template's
      // "<start_of_turn>user\n" + "<start_of_image>" becomes "user\n" + "\n\n<start_of_image>" +
      // 16 x "<image_soft_token>" + "<end_of_image>\n\n" + the text. The turn's "\n" and the image's
      // leading "\n\n" are one token ("\n\n\n"), so the image adds <start_of_image>, 16 soft tokens,
      // <end_of_image> and "\n\n": 19 tokens.
      expect(prompt.ids.length).toBe(text.ids.length + 19);
      const start = prompt.images![0]!.start;
      expect(prompt.images).toEqual([expect.objectContaining({ length: 16 })]);
      expect(prompt.ids.slice(start - 2, start + 18)).toEqual([NL3, BOI, ...Array<number>(16).fill(SOFT), EOI, NL2]);
    }
  }, 60_000);

  it('places images at their offsets in the text, several per message and across turns', () => {
    const prompt = renderPrompt(loaded, {
      model: MODEL,
      messages: [
        { role: 'user', content: 'Compare A and B', images: [{ ...small, offset: 8 }, { ...wide, offset: 15 }] },
        { role: 'assistant', content: 'They differ.' },
        { role: 'user', content: 'And this one?', images: [{ ...small, offset: 0 }] },
      ],
    });
    // Gemma 3's template trims each text part.
    expect(prompt.text).toContain('<start_of_turn>user\nCompare\n\n<start_of_image><image_soft_token><end_of_image>\n\nA and B\n\n<start_of_image><image_soft_token><end_of_image>\n\n<end_of_turn>');
    expect(prompt.images!.map((i) => i.length)).toEqual([16, 16, 16]);
    for (const image of prompt.images!) {
      expect(prompt.ids.slice(image.start, image.start + image.length).every((id) => id === SOFT)).toBe(true);
      expect(prompt.ids[image.start - 1]).toBe(BOI);
      expect(prompt.ids[image.start + image.length]).toBe(EOI);
    }
    expect(prompt.ids.filter((id) => id === SOFT)).toHaveLength(48);
  });

  it("an image in a tool result: Gemma 3's template has no tool role, so the result is the next user turn's text with its image", () => {
    const prompt = renderPrompt(loaded, {
      model: MODEL,
      messages: [
        { role: 'user', content: 'What is on my screen?' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'shot', input: {} }] },
        { role: 'tool', content: 'the screen', callId: 'c1', name: 'shot', images: [{ ...small, offset: 0 }] },
      ],
      tools: [{ name: 'shot', inputSchema: { type: 'object', properties: {} } }],
    });
    expect(prompt.images).toEqual([expect.objectContaining({ length: 16 })]);
    const image = prompt.images![0]!;
    expect(prompt.ids.slice(image.start - 1, image.start + 17)).toEqual([BOI, ...Array<number>(16).fill(SOFT), EOI]);
    expect(prompt.text.indexOf('<start_of_image>')).toBeGreaterThan(prompt.text.lastIndexOf('<start_of_turn>user'));
  });

  it('is served by the scanner as a split Gemma 3 export: its decoder, the text model\'s context, its image settings', () => {
    expect(loaded.info).toMatchObject({
      task: 'chat', dtype: 'fp32', onnxFile: 'onnx/decoder_model_merged.onnx', contextLength: 32768, imageInput: true,
      vision: { family: 'gemma3', modelType: 'gemma3', imageTokenId: SOFT, visionStartTokenId: BOI, imageSeqLength: 16, height: 64, width: 64 },
    });
  });

  it('greedy tokens equal transformers.js generate on the same inputs: no image, one image, two images', async () => {
    expect(loaded.notes).toContain('logits for the last position only');
    for (const images of [[], [small], [small, wide]]) {
      const prompt = renderPrompt(loaded, ask('Describe', images));
      const expected = await theirs(prompt.ids, images);
      expect(expected.length).toBeGreaterThan(0);
      expect((await ours(prompt.ids, prompt.images)).tokens).toEqual(expected);
    }
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
    const again = renderPrompt(loaded, ask('Cache me', [small]));
    const other = renderPrompt(loaded, ask('Cache me', [smallOther]));
    expect(other.ids).toEqual(first.ids);
    const cold = await ours(first.ids, first.images);
    const warm = await ours(again.ids, again.images);
    expect(warm.cached).toBe(first.ids.length - 1);
    expect(warm.tokens).toEqual(cold.tokens);
    const different = await ours(other.ids, other.images);
    expect(different.cached).toBeLessThan(first.images![0]!.start);
    expect(different.tokens).toEqual(await theirs(other.ids, [smallOther]));
  }, 120_000);
});
