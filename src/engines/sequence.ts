/**
 * The one interface between a chat turn and an engine: an engine runs sequences. It prefills a
 * prompt (reusing a cached prefix where it holds one), decodes it in a continuous batch with the
 * engine's other sequences, asks the sequence which tokens it allows next (a grammar, a thinking
 * tag), samples, reports each token, and stops when the sequence says so, at its output limit or
 * when it is cancelled (checked between steps). Everything a chat turn means (templates, tools,
 * thinking, grammar, finish reasons) lives above it, in src/chat/; how a model's graph is run
 * lives below it, in src/engines/<engine>/. (TEI's Backend trait: a small interface, several
 * implementations.)
 *
 * Contract: worker thread. A spec's callbacks are called on that thread between forward passes, in
 * order: logitsMask, then observe, then onToken, for each token.
 */
import type { PromptCacheStats } from '../core/hooks.js';

/** Packed bitset over the vocabulary: token i allowed when (mask[i >>> 5] >>> (i & 31)) & 1. */
export type LogitsMask = Uint32Array;

/** Whether a mask allows token `id`. */
export const allows = (mask: LogitsMask, id: number) => ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;

/** A mask over a vocabulary of `vocab` tokens that allows token `id` alone. */
export function onlyToken(vocab: number, id: number): LogitsMask {
  const mask = new Uint32Array(Math.ceil(vocab / 32));
  mask[id >>> 5] = 1 << (id & 31);
  return mask;
}

/**
 * Sampling defaults a model states (ONNX: its generation_config.json; GGUF: its `general.sampling.*`
 * metadata, else llama.cpp's own): each engine's loaded model carries them, and the chat turn fills
 * what a request leaves out from them (src/chat/sampling.ts). Declared once, here, for both sides.
 */
export interface GenerationDefaults {
  doSample: boolean;
  temperature?: number;
  topK?: number;
  topP?: number;
  repetitionPenalty?: number;
}

/** How the next token is chosen, as the request and the model's generation_config settle it. */
export interface SamplingSettings {
  doSample: boolean;
  temperature: number;
  /** 0: no top-k limit. */
  topK: number;
  /** 1: no nucleus limit. */
  topP: number;
  /** A seed makes sampling repeatable; absent: the engine's own randomness. */
  seed?: number;
  /**
   * Penalties on seen tokens, in vLLM's order: Hugging Face's repetition penalty over the prompt
   * and the generated tokens (1: none), then OpenAI's presence and frequency penalties over the
   * generated tokens. Absent: none applies.
   */
  penalties?: { presence: number; frequency: number; repetition: number };
}

/**
 * An image of the prompt, as a vision-language model's engine takes it: the placeholder tokens it
 * fills in `promptIds` (`length` of them from `start`: the image's tokens), the grid its processor
 * makes of it, and its bytes with their SHA-256 (hex), which with the grid keys its tokens in a
 * prefix cache.
 */
export interface SequenceImage {
  start: number;
  length: number;
  /** Temporal, height and width patches, as the image processor's image_grid_thw (Gemma 3: [1, 1, its tokens]). */
  grid: [number, number, number];
  bytes: Uint8Array;
  hash: string;
  /** Processed at low resolution (ChatImage.lowResolution), the view the grid was counted for. */
  lowResolution?: boolean;
}

/** What SequenceEngine.lookup may use beside the prompt's ids. */
export interface LookupOptions {
  /** The request's (as in its spec): ends a wait for a shared prefix early. */
  cancelled?: () => boolean;
  images?: readonly SequenceImage[];
}

export interface SequenceSpec {
  promptIds: number[];
  /** The prompt's images, in order (a vision-language model's; absent: a text prompt). */
  images?: SequenceImage[];
  maxTokens: number;
  sampling: SamplingSettings;
  /** Called with each generated token; returns true when the sequence must stop after it. */
  onToken: (id: number) => boolean;
  cancelled: () => boolean;
  /**
   * The tokens allowed next, asked before each token is chosen; undefined: every token; null: the
   * sequence ends here, without a token (a grammar that is complete and whose end token the model
   * cannot write). May be asynchronous (a grammar matcher's API is); an engine that cannot await
   * one says so (`SequenceEngine.constrains`).
   */
  logitsMask?: () => LogitsMask | null | undefined | Promise<LogitsMask | null | undefined>;
  /** Shown each step's logits row (only read, valid during the call) and the token chosen from it, before onToken. */
  observe?: (logits: Float32Array, token: number) => void;
  /**
   * Told when a forward pass this sequence takes part in starts (true) and ends (false): its own
   * prefill, or a batched step it is in. The pool's watchdog uses it to tell a sequence stuck in a
   * forward pass from one waiting behind another's long prefill; the first call also marks that its
   * work has begun (a worker lost before that may run it again elsewhere).
   */
  busy?: (on: boolean) => void;
}

/** A cached prefix of a prompt an engine found (`lookup`) and will reuse when handed it back in `run`. */
export interface SequencePrefix {
  /** Prompt tokens it covers. */
  readonly length: number;
  /** Present when the lookup claimed a sequence: gives it back, for a request that will not `run` after all. */
  release?(): void;
}

export interface SequenceEngine {
  /** It applies asynchronous logits masks (constrained decoding: grammars). */
  readonly constrains: boolean;
  /**
   * Checks a prompt's images before the sequence starts (before anything is sent to the client): an
   * image whose bytes do not decode is refused here, not in the middle of a streamed reply. Absent:
   * the engine takes no images.
   */
  checkImages?(images: readonly SequenceImage[]): Promise<void>;
  /**
   * The longest cached prefix of this prompt, looked up before the prefill so that its length can
   * be reported first; null: none (or no prefix cache). `maxTokens` is the spec's, given to `run`.
   * An engine may resolve it only once the request has its place (llama.cpp: a claimed sequence
   * that holds prompt and output, whose kept prefix is then exact); such a prefix has `release`.
   * An engine may also wait for another request that is prefilling a long prefix of this prompt
   * right now, and resolve with that prefix once it is ready (./prefix-waits.ts); `cancelled` (the
   * request's, as in its spec) ends such a wait early. `images`: the prompt's (the spec's), whose
   * placeholder tokens are told apart by the images' bytes.
   */
  lookup(promptIds: readonly number[], maxTokens?: number, options?: LookupOptions): SequencePrefix | null | Promise<SequencePrefix | null>;
  /** Runs one sequence to its end; resolves with the largest batch it was decoded in. */
  run(spec: SequenceSpec, prefix?: SequencePrefix | null): Promise<number>;
  /** The prefix cache's counts, when the engine has one. */
  promptCacheStats?(): PromptCacheStats;
}
