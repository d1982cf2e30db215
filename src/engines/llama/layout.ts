/**
 * How a GGUF chat model's sequences are laid out within its KV budget. node-llama-cpp 3.21.1 gives
 * every sequence of a context the same size (`kvUnified` is hard-wired false, and there is no
 * sequence-to-sequence copy), so a context of S sequences of C tokens allocates S x C cells at load.
 * Sequences of two sizes are two contexts ("rooms"):
 *
 * - every one of generationBatchSize sequences gets the whole context served, when they fit;
 * - else a long room of as many whole-context sequences as fit (at least one), and a short room of
 *   the other sequences, of what the budget leaves (fewer of them rather than each under
 *   MIN_SHORT_TOKENS: a short room too short for an agent's system prompt is no room).
 *
 * A request goes to the room its prompt plus max_tokens needs (./slots.ts); one that needs the long
 * room waits for a long sequence when all of them are busy. Two contexts decode in two passes a step
 * (their batches are not one), sharing the worker's threads (node-llama-cpp's threads splitter), and
 * each reserves its own compute buffer, whose largest part is the logits of a whole prefill chunk
 * (vocabulary x prefillChunkTokens floats: 297 MiB for Qwen's 151,936 tokens at 512, measured): the
 * short room is paid for out of the budget, and is made only when what is left after it still holds
 * sequences of MIN_SHORT_TOKENS. Measured on the test GGUF in docs/internals.md.
 *
 * Contract: pure; the worker (./load.ts) creates one context per room.
 */
import { KV_CELL_STEP } from '../../models/gguf-kv.js';

export interface Room {
  sequences: number;
  /** Tokens each sequence holds. */
  contextSize: number;
}

export interface Layout {
  rooms: Room[];
  /** KV bytes the rooms take, as the budget counts them. */
  kvBytes: number;
}

/** The shortest sequence of a short room (or the context served, when it is shorter still: then every sequence is whole). */
export const MIN_SHORT_TOKENS = 4096;

export interface LayoutOptions {
  /** The context served: what the longest prompt plus output may take. */
  contextLength: number;
  /** generationBatchSize: the sequences decoded together. */
  sequences: number;
  bytesPerToken: number;
  budgetBytes: number;
  /** What a second context costs beside its KV (its compute buffer), counted against the budget. */
  contextOverheadBytes: number;
}

export function planLayout(options: LayoutOptions): Layout {
  const { contextLength, sequences, bytesPerToken, budgetBytes, contextOverheadBytes } = options;
  const bytes = (rooms: Room[]) => rooms.reduce((n, r) => n + r.sequences * r.contextSize * bytesPerToken, 0);
  const whole = bytesPerToken > 0 ? Math.floor(budgetBytes / (contextLength * bytesPerToken)) : sequences;
  if (whole >= sequences || contextLength <= MIN_SHORT_TOKENS) {
    const rooms = [{ sequences: Math.max(1, Math.min(sequences, whole)), contextSize: contextLength }];
    return { rooms, kvBytes: bytes(rooms) };
  }
  const long: Room = { sequences: Math.max(1, whole), contextSize: contextLength };
  const left = budgetBytes - bytes([long]) - contextOverheadBytes;
  let count = sequences - long.sequences;
  const step = (tokens: number) => Math.floor(tokens / KV_CELL_STEP) * KV_CELL_STEP;
  let size = Math.min(step(left / (count * bytesPerToken)), contextLength - KV_CELL_STEP);
  if (size < MIN_SHORT_TOKENS) {
    count = Math.max(0, Math.floor(left / (MIN_SHORT_TOKENS * bytesPerToken)));
    size = count > 0 ? Math.min(step(left / (count * bytesPerToken)), contextLength - KV_CELL_STEP) : 0;
  }
  const rooms = count > 0 && size >= MIN_SHORT_TOKENS ? [long, { sequences: count, contextSize: size }] : [long];
  return { rooms, kvBytes: bytes(rooms) };
}

/** The layout as the log and /v1/models say it: `1 x 32768 + 7 x 4096`. */
export const layoutText = (layout: Layout) => layout.rooms.map((r) => `${r.sequences} x ${r.contextSize}`).join(' + ');
