/**
 * Images on a vision-language model (issue 42), in two parts:
 *
 * 1. In this process, on the engine's own loading code (src/engines/onnx/load.ts): per image, at
 *    each size, decoding its PNG bytes (RawImage, sharp), the model's image processor
 *    (preprocessor_config.json: resize, normalize, patchify) and the vision encoder
 *    (src/engines/onnx/decode/vision-inputs.ts runVisionEncoder), median of --rounds each.
 * 2. Over HTTP, against the server as a child process (./server-process.ts): time to first token
 *    of one streamed OpenAI chat request with the same text, without an image and with one of each
 *    size, in interleaved rounds (the order turns each round). Every request of a round is new to
 *    the prompt cache (the round's number opens its text; each image's pixels differ per round);
 *    "again" resends the large-image request just made, which reads the image from the cache.
 *
 * Images are generated here (a gradient, PNG). On the bundled model (random weights, hidden size
 * 64) the encoder is tiny: the processor's share is larger than on a real model.
 *
 *   npm run bench:vision [-- --rounds 5 --model tiny-qwen3-vl-random --models-dir models]
 *   npm run bench:vision -- --model /path/to/Qwen2.5-VL-3B-Instruct-ONNX   (a Qwen-VL export folder)
 *   npm run bench:vision -- --quick   (2 rounds: checks that it runs)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { RawImage } from '@huggingface/transformers';
import { ENGINE_DEFAULTS } from '../../src/core/engine-settings.js';
import { disposeModel, loadModel } from '../../src/engines/onnx/load.js';
import { runVisionEncoder, type ProcessedImage } from '../../src/engines/onnx/decode/vision-inputs.js';
import { scanModels } from '../../src/models/registry.js';
import { imageGrid } from '../../src/models/vision.js';
import { median, writeResults } from './report.js';
import { startServerProcess } from './server-process.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    quick: { type: 'boolean', default: false },
    model: { type: 'string', default: 'tiny-qwen3-vl-random' },
    'models-dir': { type: 'string', default: 'models' },
    'max-tokens': { type: 'string', default: '4' },
  },
});
const ROUNDS = values.quick ? 2 : Number(values.rounds);
// --model: an id in --models-dir, or the path of a model folder (its parent is then the models folder).
const asFolder = path.resolve(values.model!);
const [MODELS_DIR, MODEL] = fs.existsSync(path.join(asFolder, 'config.json'))
  ? [path.dirname(asFolder), path.basename(asFolder)]
  : [path.resolve(values['models-dir']!), values.model!];
const MAX_TOKENS = Number(values['max-tokens']);
const SIZES = [{ name: 'small', width: 300, height: 200 }, { name: 'large', width: 1280, height: 720 }] as const;
type Size = (typeof SIZES)[number];
const TEXT = 'Describe this picture in one sentence.';

/** A width x height PNG: a gradient whose blue channel is `shade` (a different shade, different bytes and pixels). */
async function png(size: Size, shade: number): Promise<Buffer> {
  const { width, height } = size;
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) raw.set([(i % width) % 256, Math.floor(i / width) % 256, shade % 256], i * 3);
  return sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

const info = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === MODEL);
if (!info) throw new Error(`no model ${MODEL} in ${MODELS_DIR}`);
if (!info.vision) throw new Error(`${MODEL} is not a vision-language model this server serves (a split Qwen-VL export)`);
const spec = info.vision;

// ------------------------------------------------ 1. decoding, preprocessing, encoding in this process

const loaded = await loadModel(info, ENGINE_DEFAULTS);
const vision = loaded.vision!;
const perImage: Array<{ size: string; width: number; height: number; tokens: number; pngBytes: number; decodeMs: number; preprocessMs: number; encodeMs: number }> = [];
try {
  for (let round = 0; round <= ROUNDS; round++) {
    for (const size of round % 2 ? [...SIZES].reverse() : SIZES) {
      const bytes = await png(size, round);
      let t = performance.now();
      const raw = await RawImage.fromBlob(new Blob([new Uint8Array(bytes)]));
      const decodeMs = performance.now() - t;
      t = performance.now();
      const processed = (await vision.processor(raw)) as unknown as ProcessedImage;
      const preprocessMs = performance.now() - t;
      t = performance.now();
      const features = await runVisionEncoder(vision.encoder, processed);
      const encodeMs = performance.now() - t;
      const tokens = features.length / vision.hiddenSize;
      const grid = imageGrid(spec, size.width, size.height);
      if (tokens !== grid.tokens) throw new Error(`the encoder gave ${tokens} rows for ${size.width}x${size.height}; the prompt counts ${grid.tokens}`);
      // Round 0 warms the sessions up (first runs allocate): not counted.
      if (round > 0) perImage.push({ size: size.name, width: size.width, height: size.height, tokens, pngBytes: bytes.length, decodeMs, preprocessMs, encodeMs });
      console.log(`round ${round} ${size.width}x${size.height}: ${tokens} tokens, decode ${decodeMs.toFixed(1)} ms, preprocess ${preprocessMs.toFixed(1)} ms, encode ${encodeMs.toFixed(1)} ms`);
    }
  }
} finally {
  await disposeModel(loaded);
}

// ------------------------------------------------ 2. time to first token over HTTP

type Variant = 'text' | 'small' | 'large' | 'large again';

/** One streamed greedy chat request: ms to the first text, and the prompt's tokens and cached tokens from the usage chunk. */
async function ttft(url: string, text: string, image: Buffer | undefined): Promise<{ ms: number; promptTokens: number; cachedTokens: number }> {
  // The image first (as Qwen-VL's examples put it): requests of a round share no text past the template's opening.
  const content = image ? [{ type: 'image_url', image_url: { url: `data:image/png;base64,${image.toString('base64')}` } }, { type: 'text', text }] : text;
  const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: MAX_TOKENS, temperature: 0, stream: true, stream_options: { include_usage: true } });
  const started = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  if (!res.ok) throw new Error(`${res.status}: ${await res.text()}`);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let seen = '';
  let ms = NaN;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += decoder.decode(value, { stream: true });
    // The first chunk that carries text (or ends the choice, for a reply whose first tokens are no text).
    if (Number.isNaN(ms) && /"content":"[^"]|"finish_reason":"/.test(seen)) ms = performance.now() - started;
  }
  const chunks = seen.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as { usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } });
  const usage = chunks.map((c) => c.usage).filter((u) => u !== undefined && u !== null).at(-1);
  if (!usage) throw new Error(`no usage chunk: ${seen.slice(-300)}`);
  return { ms, promptTokens: usage.prompt_tokens, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0 };
}

const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-vision-cache-'));
const server = await startServerProcess(['--models-dir', MODELS_DIR, '--preload', MODEL], { PROMPT_CACHE_DIR: cacheDir }, { preloadAll: false });
const requests: Array<{ round: number; variant: Variant; ms: number; promptTokens: number; cachedTokens: number }> = [];
try {
  const order: Variant[] = ['text', 'small', 'large'];
  for (let round = 0; round <= ROUNDS; round++) {
    const text = `Round ${round}. ${TEXT}`;
    const images = { small: await png(SIZES[0], 100 + round), large: await png(SIZES[1], 100 + round) };
    const turned = [...order.slice(round % 3), ...order.slice(0, round % 3)];
    for (const variant of [...turned, 'large again' as const]) {
      const image = variant === 'text' ? undefined : images[variant === 'small' ? 'small' : 'large'];
      const r = await ttft(server.url, text, image);
      // Round 0 warms the server up (the first requests build the sessions' buffers): not counted.
      if (round > 0) requests.push({ round, variant, ...r });
      console.log(`round ${round} ${variant}: first token ${r.ms.toFixed(0)} ms, ${r.promptTokens} prompt tokens (${r.cachedTokens} cached)`);
    }
  }
} finally {
  await server.stop();
  fs.rmSync(cacheDir, { recursive: true, force: true });
}

// ------------------------------------------------ results

const f1 = (ms: number) => ms.toFixed(1);
const imageRows = SIZES.map((size) => {
  const rows = perImage.filter((r) => r.size === size.name);
  const [decode, preprocess, encode] = [median(rows.map((r) => r.decodeMs)), median(rows.map((r) => r.preprocessMs)), median(rows.map((r) => r.encodeMs))];
  return [`${size.width}x${size.height}`, rows[0]!.tokens, Math.round(rows[0]!.pngBytes / 1024), f1(decode), f1(preprocess), f1(encode), f1(decode + preprocess + encode)];
});
const textMs = median(requests.filter((r) => r.variant === 'text').map((r) => r.ms));
const variants: Variant[] = ['text', 'small', 'large', 'large again'];
const ttftRows = variants.map((variant) => {
  const rows = requests.filter((r) => r.variant === variant);
  const ms = median(rows.map((r) => r.ms));
  const label = variant === 'text' ? 'no image' : variant === 'large again' ? `${SIZES[1].width}x${SIZES[1].height}, the same request again` : `${SIZES[variant === 'small' ? 0 : 1].width}x${SIZES[variant === 'small' ? 0 : 1].height}`;
  return [label, rows.at(-1)!.promptTokens, rows.at(-1)!.cachedTokens, Math.round(ms), `${(ms / textMs).toFixed(2)}×`];
});
writeResults('vision', { model: MODEL, rounds: ROUNDS, maxTokens: MAX_TOKENS, text: TEXT, perImage, requests }, [
  {
    title: `One image on ${MODEL}, in process: PNG decode, image processor, vision encoder (median of ${ROUNDS})`,
    columns: ['image', 'tokens', 'PNG KiB', 'decode ms', 'preprocess ms', 'encode ms', 'total ms'],
    rows: imageRows,
  },
  {
    title: `Time to first token over HTTP on ${MODEL}: the same text with and without an image (median of ${ROUNDS} interleaved rounds, ${MAX_TOKENS} tokens asked)`,
    columns: ['request', 'prompt tokens', 'cached', 'TTFT ms', 'vs no image'],
    rows: ttftRows,
  },
], [
  'Part 1 runs in the benchmark process on the engine\'s loading code (default engine settings); part 2 against the server as a child process (tsx, the model preloaded, its own prompt cache folder). '
  + 'TTFT is from sending the request to the first streamed text; every request of a round is new to the prompt cache but the chat template\'s opening (the `cached` column), '
  + 'except "the same request again", which reads the image from the cache. A round 0 before the counted ones warms both parts up.',
]);
