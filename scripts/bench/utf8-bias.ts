/**
 * The tokens of a GGUF vocabulary that are not valid UTF-8 on their own (part of a character's
 * bytes), for the peer benchmark (./llama-server.ts): llama-server parses every output as its chat
 * format's text, on /completion too (common/chat.cpp's PEG parser, even for the plain Content-only
 * format), and answers malformed UTF-8 with a 500 ("The model produced output that does not match
 * the expected Content-only format"). A random-weight model writes such bytes in any order, so
 * llama-server's requests carry a logit bias that disallows these tokens: any concatenation of
 * the rest is valid UTF-8. It does not change the compute per token (one forward pass, one sample).
 */
import { readGgufMetadata } from '../../src/models/gguf.js';
import { BYTE_LEVEL_ALPHABET } from '../../src/tokenize/token-bounds.js';

/** llama.cpp's token types (llama-vocab.h LLAMA_TOKEN_TYPE_*): normal text, and a byte of SentencePiece's byte fallback. */
const NORMAL = 1;
const BYTE = 6;

export function partialUtf8Tokens(gguf: string): number[] {
  const metadata = readGgufMetadata(gguf);
  const tokens = metadata.get('tokenizer.ggml.tokens') as string[];
  const types = metadata.get('tokenizer.ggml.token_type') as number[] | undefined;
  const model = metadata.get('tokenizer.ggml.model');
  const strict = new TextDecoder('utf-8', { fatal: true });
  const byteOf = new Map(BYTE_LEVEL_ALPHABET.map((char, byte) => [char, byte]));
  const partial: number[] = [];
  tokens.forEach((token, id) => {
    const type = types?.[id] ?? NORMAL;
    if (model === 'llama') {
      // SentencePiece: text pieces are whole characters; a byte token <0xXX> above 0x7F is part of one.
      if (type === BYTE && parseInt(token.slice(3, 5), 16) >= 0x80) partial.push(id);
      return;
    }
    if (model !== 'gpt2' || type !== NORMAL) return;
    const bytes = [...token].map((char) => byteOf.get(char));
    if (bytes.some((b) => b === undefined)) return;
    try {
      strict.decode(Uint8Array.from(bytes as number[]));
    } catch {
      partial.push(id);
    }
  });
  return partial;
}
