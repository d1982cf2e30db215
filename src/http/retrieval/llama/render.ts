/** llama-server's answers. */
import type { TokenizeResult } from '../../../core/types.js';

/** /tokenize: `{tokens}`, ids or `{id, piece}` with with_pieces. */
export function renderLlamaTokens(result: TokenizeResult, withPieces: boolean) {
  return { tokens: withPieces ? (result.pieces ?? []).map((p) => ({ id: p.id, piece: p.text })) : result.tokens };
}
