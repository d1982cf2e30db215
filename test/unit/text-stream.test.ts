import { describe, expect, it } from 'vitest';
import { TextStream } from '../../src/worker/text-stream.js';

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
