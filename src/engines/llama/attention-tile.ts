/**
 * Passes sized for llama.cpp's CPU flash attention. Its kernel (ggml-cpu ops.cpp,
 * ggml_compute_forward_flash_attn_ext) is tiled only for a pass of at least GGML_FA_TILE_Q = 64 query
 * tokens per sequence; a pass of 2 to 63 goes through its one-row-at-a-time kernel, whose cost per
 * query token grows with every position attended. Measured on the test GGUF with 18,733 tokens kept
 * (2 AMD EPYC cores, flash attention on): 38 new tokens took 256 ms on the prebuilt binary and
 * 132 ms built here, 64 new tokens 38-41 ms on either; with flash attention off, 38 took 36 ms.
 * An agent's next turn is that pass: tens of new tokens after a long kept prefix.
 *
 * - `keepForTile`: the kept prefix is cut so that the pass has the tile's 64 tokens, when the
 *   estimate below says that costs less; the tokens evaluated again are not cache reads (./slots.ts
 *   reports the prefix it keeps).
 * - `prefillEnd`: a long prompt's chunks are cut so that none is shorter than the tile when the
 *   prompt allows it (no token evaluated twice).
 *
 * Contract: pure.
 */

/** llama.cpp's CPU flash-attention tile (GGML_FA_TILE_Q in ggml-cpu/common.h): the fewest query tokens its tiled kernel takes. */
export const ATTENTION_TILE = 64;

/**
 * What a query token's attention costs per layer and position attended, in the floating-point
 * operations the rest of its pass does in the same time (so the two add up): measured on the
 * prebuilt CPU binary on 2 AMD EPYC cores, the one-row kernel takes 125-160 ns per layer and position
 * whatever the heads (4 heads of 16 on the test GGUF at 4k and 18.7k positions, 14 heads of 64 on
 * Qwen2.5-0.5B's shape at 4k), the tiled one 15-40 ns, while that binary's matrix products ran about
 * 128 GFLOP/s.
 */
const ROW_KERNEL_OPS = 18_000;
const TILED_KERNEL_OPS = 4_000;

/** What the estimate needs of a model whose passes take the tiled kernel (./load.ts says when). */
export interface AttentionCost {
  /** Layers that attend to every position. */
  layers: number;
  /** Floating-point operations of the rest of a token's pass: twice the parameters. */
  perToken: number;
}

/**
 * The prefix to keep of a prompt of `prompt` tokens on a sequence that holds `keep` of it: `keep`,
 * or less so that the pass has the tile's tokens, when evaluating the tile costs less than the
 * one-row kernel on the few new tokens. On Qwen2.5-0.5B's shape at 4k kept: 38 new tokens cut (one
 * pass of 64 took 727 ms, one of 38 780 ms), 30 kept; on a 7B model about 58 at 4k, 45 at 18.7k.
 */
export function keepForTile(cost: AttentionCost | undefined, prompt: number, keep: number): number {
  const fresh = prompt - keep;
  if (!cost || fresh < 2 || fresh >= ATTENTION_TILE || prompt < ATTENTION_TILE) return keep;
  const positions = cost.layers * keep;
  const rows = fresh * (cost.perToken + ROW_KERNEL_OPS * positions);
  const tile = ATTENTION_TILE * (cost.perToken + TILED_KERNEL_OPS * positions);
  return rows > tile ? prompt - ATTENTION_TILE : keep;
}

/**
 * Where the chunks of a prefill of `length` tokens in chunks of `chunk` end and the last pass
 * (which samples) begins: `length - chunk` (whole chunks from the start, a remainder, then a full
 * last pass), moved on when the remainder is shorter than the tile, so that it has the tile's tokens
 * and the last pass keeps at least as many.
 */
export function prefillEnd(length: number, chunk: number): number {
  const end = Math.max(0, length - chunk);
  const remainder = end % chunk;
  return remainder > 0 && remainder < ATTENTION_TILE && chunk >= 2 * ATTENTION_TILE ? end + ATTENTION_TILE - remainder : end;
}
