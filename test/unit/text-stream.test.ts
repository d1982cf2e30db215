import { beforeAll, describe, expect, it } from 'vitest';
import { AutoTokenizer, env, type PreTrainedTokenizer } from '@huggingface/transformers';
import { TextStream } from '../../src/chat/text-stream.js';
import { CHAT_MODEL, MODELS_DIR } from '../helpers/paths.js';

// A byte-level vocabulary like GPT-2/Qwen: each token is a run of UTF-8 bytes; decoding a list of
// tokens decodes their concatenated bytes, with U+FFFD for an incomplete trailing sequence.
function byteVocab(pieces: Uint8Array[]) {
  const decoder = new TextDecoder('utf-8');
  return (ids: number[]) => decoder.decode(Buffer.concat(ids.map((id) => pieces[id]!)));
}

function run(stream: TextStream, ids: number[]) {
  const deltas: string[] = [];
  let stop: string | null = null;
  for (const id of ids) {
    const step = stream.push(id);
    if (step.delta) deltas.push(step.delta);
    if (step.stopString) {
      stop = step.stopString;
      break;
    }
  }
  const tail = stream.finish();
  if (tail.delta) deltas.push(tail.delta);
  return { deltas, stop, text: stream.shownText };
}

const textPieces = (...parts: string[]) => parts.map((p) => Buffer.from(p, 'utf8'));

describe('TextStream', () => {
  it('never emits a broken multi-byte character split across tokens', () => {
    const euro = Buffer.from('€', 'utf8'); // 3 bytes
    const pieces = [Buffer.from('a'), euro.subarray(0, 1), euro.subarray(1, 2), euro.subarray(2), Buffer.from('b')];
    const { deltas, text } = run(new TextStream(byteVocab(pieces), []), [0, 1, 2, 3, 4]);
    expect(deltas).toEqual(['a', '€', 'b']);
    expect(text).toBe('a€b');
  });

  it('stops at a stop sequence spanning tokens and never shows any of it', () => {
    const pieces = textPieces('Hello', ' wor', 'ld', ' EN', 'D', ' more');
    const { deltas, stop, text } = run(new TextStream(byteVocab(pieces), ['END']), [0, 1, 2, 3, 4, 5]);
    expect(stop).toBe('END');
    expect(text).toBe('Hello world ');
    expect(deltas.join('')).toBe('Hello world ');
    expect(deltas.some((d) => d.includes('E'))).toBe(false);
  });

  it('releases held-back text when it turns out not to be a stop sequence', () => {
    const pieces = textPieces('a', ' EN', 'Z');
    const stream = new TextStream(byteVocab(pieces), ['END']);
    expect(stream.push(0).delta).toBe('a');
    expect(stream.push(1).delta).toBe(' '); // "EN" could begin "END"
    expect(stream.push(2).delta).toBe('ENZ');
    expect(stream.finish().delta).toBe('');
    expect(stream.shownText).toBe('a ENZ');
  });

  it('picks the earliest of several matching stop sequences', () => {
    const pieces = textPieces('x', 'yz');
    const { stop, text } = run(new TextStream(byteVocab(pieces), ['z', 'xy']), [0, 1]);
    expect(stop).toBe('xy');
    expect(text).toBe('');
  });

  it('shows held-back text at the end of generation', () => {
    const { text } = run(new TextStream(byteVocab(textPieces('ok', ' EN')), ['END']), [0, 1]);
    expect(text).toBe('ok EN');
  });
});

// The bundled model's real Qwen3 tokenizer: byte-level tokens such as "space + first byte of a CJK
// character" are common in its vocabulary. Tokens are named by their byte-level spelling
// (GPT-2's bytes-to-unicode map: "Ġ" is a space, "é" the byte 0xE9, "ĩ" 0x87, "ı" 0x8F).
describe('TextStream on the Qwen3 tokenizer: tokens that end inside a character', () => {
  let tokenizer: PreTrainedTokenizer;
  let id: (token: string) => number;
  let decode: (ids: number[]) => string;
  beforeAll(async () => {
    env.allowRemoteModels = false;
    env.localModelPath = `${MODELS_DIR}/`;
    tokenizer = await AutoTokenizer.from_pretrained(CHAT_MODEL);
    id = (token) => {
      const found = tokenizer.convert_tokens_to_ids(token) as number | undefined;
      if (found === undefined || found === tokenizer.unk_token_id) throw new Error(`no token ${token}`);
      return found;
    };
    decode = (ids) => (ids.length ? tokenizer.decode(ids, { skip_special_tokens: true }) : '');
  });

  it('releases the whole characters in front of a trailing partial one at once', () => {
    // "大量" then " 量" spelt as "space + 0xE9", 0x87, 0x8F.
    const stream = new TextStream(decode, []);
    expect(stream.push(id('å¤§éĩı')).delta).toBe('大量');
    expect(stream.push(id('Ġé')).delta).toBe(' ');
    expect(stream.push(id('ĩ')).delta).toBe('');
    expect(stream.push(id('ı')).delta).toBe('量');
    expect(stream.finish().delta).toBe('');
    expect(stream.shownText).toBe('大量 量');
  });

  it('finds a stop string at the token that completes it, even when that token ends inside a character', () => {
    const stream = new TextStream(decode, ['量 ']);
    expect(stream.push(id('å¤§éĩı'))).toEqual({ delta: '大', stopString: null }); // "量" could begin the stop string
    expect(stream.push(id('Ġé'))).toEqual({ delta: '', stopString: '量 ' });
    expect(stream.finish()).toEqual({ delta: '', stopString: '量 ' });
    expect(stream.shownText).toBe('大');
  });

  it('an output cut inside a character ends with the whole characters only, never U+FFFD', () => {
    // "Party 🎉" is four tokens: "Party", "space + 0xF0 0x9F", 0x8E, 0x89; the output stops after three.
    expect(tokenizer.encode('Party 🎉', { add_special_tokens: false })).toEqual([id('Party'), id('ĠðŁ'), id('İ'), id('ī')]);
    const { deltas, text } = run(new TextStream(decode, []), [id('Party'), id('ĠðŁ'), id('İ')]);
    expect(text).toBe('Party ');
    expect(deltas.join('')).toBe('Party ');
  });

  it('keeps a U+FFFD that stands for invalid bytes in the middle of the text', () => {
    // "space + 0xE2 0x81" followed by a token starting with a space: the two bytes never complete.
    const { text } = run(new TextStream(decode, []), [id('Ġâģ'), id('Ġfile')]);
    expect(text).toBe(' \uFFFD file');
  });
});
