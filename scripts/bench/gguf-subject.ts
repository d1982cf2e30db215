/**
 * The long-context benchmark's GGUF subjects (`<shape>-gguf-f32`, `-gguf-q8`, `-gguf-q4`): the
 * server serving a GGUF file on its llama.cpp engine (src/engines/llama/), over HTTP/SSE as the ONNX
 * subjects are served, against node-llama-cpp driving the very same file directly
 * (./llama-cpp-child.ts). Both run llama.cpp's own kernels on the same bytes, so the ratios measure
 * what the server adds around llama.cpp (HTTP, the chat layer, the worker, the runner's per-step
 * work), nothing else.
 *
 * The file: the shape's fp32 bench subject (scripts/builders/bundled/bench-lm.ts, random weights)
 * converted by scripts/builders/gguf/from-onnx.ts to F32, Q8_0 or Q4_0 (llama.cpp's own
 * quantization), plus what the server needs to serve it as a chat model: the subject's ChatML
 * template in `tokenizer.chat_template` and `<|im_end|>` as the end-of-generation token.
 *
 * The tokenizer: the bench subjects have no byte-level BPE tokenizer (theirs is word-level over
 * GloVe words, a WordPiece tokenizer.json), so scripts/builders/gguf/chat-gguf.ts cannot write one
 * into the metadata, and the word list written as a `gpt2` vocabulary without merges would split
 * every word into letters. The server's folder therefore holds the subject's tokenizer.json and
 * tokenizer_config.json beside the GGUF, which the llama engine reads when present
 * (src/engines/llama/load.ts loadGgufTokenizer): a prompt renders and counts exactly as for the ONNX
 * subject (`n` prompt tokens = n - 5 words + the template's 5), and its ids are the GGUF's ids
 * (from-onnx writes the same vocabulary). llama.cpp itself is fed token ids, as for every subject.
 *
 * The ONNX subjects never end early: their output head adds -1e4 to every special token. The GGUF's
 * `llama` arch has no head bias, and the server stops on `<|im_end|>` (llama.cpp also makes it an
 * end-of-generation token by its text), so a greedy run could end before max_tokens and fail the
 * benchmark's count. The output rows of the special tokens are zeroed instead: their logit is 0 for
 * every input, below the largest of ~49k random logits, so greedy decoding never picks them. Four
 * rows of the head: no cost either engine would notice.
 */
import fs from 'node:fs';
import path from 'node:path';
import { onnxToGguf } from '../builders/gguf/from-onnx.js';
import { tensorBytes, type GgmlType } from '../builders/gguf/gguf-writer.js';

/** The GGUF subjects' forms and the llama.cpp file type of each. */
export const GGUF_FORMS = { 'gguf-f32': 'F32', 'gguf-q8': 'Q8_0', 'gguf-q4': 'Q4_0' } as const satisfies Record<string, Exclude<GgmlType, 'F16'>>;
const FORM = /-(gguf-(?:f32|q8|q4))$/;

export const isGgufSubject = (subject: string) => FORM.test(subject);
/** The ONNX bench subject the GGUF is written from: the shape's fp32 one. */
export const ggufSourceOf = (subject: string) => subject.replace(FORM, '-fp32');
export const ggufTypeOf = (subject: string): Exclude<GgmlType, 'F16'> => GGUF_FORMS[FORM.exec(subject)![1] as keyof typeof GGUF_FORMS];

/** bench-lm.ts's template (the ONNX subjects' tokenizer_config.json chat_template). */
const templateOf = (source: string) => JSON.parse(fs.readFileSync(path.join(source, 'tokenizer_config.json'), 'utf8')).chat_template as string;

/**
 * Writes (when absent or older than its source) the subject's GGUF under `benchModels`/gguf and
 * returns its path. The same file serves the server and llama.cpp.
 */
export function ggufSubjectFile(benchModels: string, subject: string, log: (line: string) => void = (l) => process.stderr.write(l + '\n')): string {
  const source = path.join(benchModels, ggufSourceOf(subject));
  const type = ggufTypeOf(subject);
  const file = path.join(benchModels, 'gguf', `${path.basename(source).replace(/-fp32$/, '')}-chat-${type}.gguf`);
  const onnxFile = path.join(source, 'onnx', 'model.onnx');
  if (fs.existsSync(file) && fs.statSync(file).mtimeMs >= fs.statSync(onnxFile).mtimeMs) return file;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  log(`writing ${path.relative(process.cwd(), file)}`);
  const tokenizer = JSON.parse(fs.readFileSync(path.join(source, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } };
  const eos = tokenizer.model.vocab['<|im_end|>'];
  if (eos === undefined) throw new Error(`${source}: no <|im_end|> in its tokenizer`);
  const specials = Object.entries(tokenizer.model.vocab).filter(([word]) => /^\[(PAD|UNK)\]$|^<\|im_(start|end)\|>$/.test(word)).map(([, id]) => id);
  const partial = `${file}.partial.gguf`;
  onnxToGguf({
    modelDir: source,
    onnxFile: 'onnx/model.onnx',
    out: partial,
    type,
    metadata: {
      'general.name': { type: 'string', value: path.basename(file, '.gguf') },
      'tokenizer.chat_template': { type: 'string', value: templateOf(source) },
      'tokenizer.ggml.eos_token_id': { type: 'u32', value: eos },
      'tokenizer.ggml.bos_token_id': { type: 'u32', value: eos },
    },
  });
  zeroOutputRows(partial, specials);
  fs.renameSync(partial, file);
  return file;
}

/**
 * The server's model folder for a GGUF subject, inside `modelsDir`: the GGUF (linked), the source
 * subject's tokenizer files, and a manifest setting the context length: the server's context holds
 * `generationBatchSize` sequences of that many tokens each, as llama.cpp's child holds its sequences
 * of the same length, so the two allocate the same KV cache. Rewritten before each server start.
 */
export function writeGgufServerFolder(modelsDir: string, subject: string, file: string, benchModels: string, contextLength: number): void {
  const dir = path.join(modelsDir, subject);
  const source = path.join(benchModels, ggufSourceOf(subject));
  fs.mkdirSync(dir, { recursive: true });
  const link = (target: string, name: string) => {
    const at = path.join(dir, name);
    if (!fs.existsSync(at)) fs.symlinkSync(target, at);
  };
  // Named by its type, so the server also answers to `<subject>:Q8_0` (src/models/registry.ts).
  link(file, `${subject}-${ggufTypeOf(subject)}.gguf`);
  link(path.join(source, 'tokenizer.json'), 'tokenizer.json');
  link(path.join(source, 'tokenizer_config.json'), 'tokenizer_config.json');
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ id: subject, task: 'chat', contextLength }) + '\n');
}

/** Sets the rows `rows` of `output.weight` (the output head, [vocab, hidden]) to zero, whatever its type (a zero fp16 scale zeroes a Q8_0 / Q4_0 block). */
function zeroOutputRows(file: string, rows: number[]): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const header = Buffer.alloc(64 << 20);
    const length = fs.readSync(fd, header, 0, header.length, 0);
    let at = 0;
    const u32 = () => ((at += 4), header.readUInt32LE(at - 4));
    const u64 = () => ((at += 8), Number(header.readBigUInt64LE(at - 8)));
    const str = () => {
      const n = u64();
      at += n;
      return header.toString('utf8', at - n, at);
    };
    const SIZE: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
    const skipValue = (type: number) => {
      if (type === 8) return void str();
      if (type === 9) {
        const item = u32();
        const count = u64();
        for (let i = 0; i < count; i++) skipValue(item);
        return;
      }
      at += SIZE[type]!;
    };
    if (header.toString('latin1', 0, 4) !== 'GGUF') throw new Error(`${file}: not a GGUF file`);
    at = 4;
    u32();
    const tensors = u64();
    const kvs = u64();
    let alignment = 32;
    for (let i = 0; i < kvs; i++) {
      const key = str();
      const type = u32();
      if (key === 'general.alignment' && type === 4) alignment = u32();
      else skipValue(type);
    }
    const GGML: Record<number, Exclude<GgmlType, 'F16'>> = { 0: 'F32', 2: 'Q4_0', 8: 'Q8_0' };
    let found: { dims: number[]; type: number; offset: number } | undefined;
    for (let i = 0; i < tensors; i++) {
      const name = str();
      const dims = Array.from({ length: u32() }, () => u64());
      const type = u32();
      const offset = u64();
      if (name === 'output.weight') found = { dims, type, offset };
    }
    if (at > length) throw new Error(`${file}: header larger than read`);
    if (!found) throw new Error(`${file}: no output.weight`);
    const type = GGML[found.type];
    if (!type) throw new Error(`${file}: output.weight of ggml type ${found.type}`);
    const dataStart = Math.ceil(at / alignment) * alignment;
    const rowBytes = tensorBytes(type, found.dims[0]!);
    const zeros = Buffer.alloc(rowBytes);
    for (const row of rows) fs.writeSync(fd, zeros, 0, rowBytes, dataStart + found.offset + row * rowBytes);
  } finally {
    fs.closeSync(fd);
  }
}
