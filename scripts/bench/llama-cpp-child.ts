/**
 * llama.cpp (node-llama-cpp's prebuilt CPU binary) in its own process, driven by the long-context
 * benchmark over IPC, so its threads, memory and peak RSS are its own.
 *
 * Messages in: {type:'load', modelPath, contextSize (tokens of each sequence: node-llama-cpp gives
 * every sequence its own contextSize cells), threads, sequences}; {type:'run', prompts:
 * number[][], decode} (one prompt per sequence, all decoded at once); {type:'exit'}.
 * Messages out: {type:'loaded', flashAttention}; {type:'result', runs: [{ttftMs, decodeTps, tokens}],
 * aggregateTps, rssMiB, peakMiB}; {type:'error', message}.
 */
import fs from 'node:fs';
import { getLlama, type LlamaContext, type LlamaModel, type Token } from 'node-llama-cpp';

type Message =
  | { type: 'load'; modelPath: string; contextSize: number; threads: number; sequences: number }
  | { type: 'run'; prompts: number[][]; decode: number }
  | { type: 'exit' };

const send = (m: unknown) => process.send!(m);
const memory = () => {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  return { rssMiB: Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024, peakMiB: Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024 };
};

const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: 'error' as never });
let model: LlamaModel | undefined;
let context: LlamaContext | undefined;

async function decodeOne(sequenceIndex: number, prompt: number[], decode: number, started: number) {
  const sequence = context!.getSequence();
  void sequenceIndex;
  let first = NaN;
  let last = NaN;
  const tokens: number[] = [];
  try {
    for await (const token of sequence.evaluate(prompt as Token[], { temperature: 0 })) {
      last = performance.now() - started;
      if (tokens.length === 0) first = last;
      tokens.push(token);
      if (tokens.length === decode) break;
    }
  } finally {
    sequence.dispose();
  }
  return { ttftMs: first, decodeTps: (decode - 1) / ((last - first) / 1000), tokens, lastMs: last };
}

process.on('message', async (message: Message) => {
  try {
    if (message.type === 'load') {
      model = await llama.loadModel({ modelPath: message.modelPath });
      context = await model.createContext({ contextSize: message.contextSize, sequences: message.sequences, threads: message.threads, batchSize: 512, flashAttention: 'auto' });
      send({ type: 'loaded', flashAttention: context.flashAttention });
    } else if (message.type === 'run') {
      const started = performance.now();
      const runs = await Promise.all(message.prompts.map((p, i) => decodeOne(i, p, message.decode, started)));
      const total = Math.max(...runs.map((r) => r.lastMs)) / 1000;
      send({ type: 'result', runs, aggregateTps: (runs.length * message.decode) / total, ...memory() });
    } else if (message.type === 'exit') {
      await context?.dispose();
      await model?.dispose();
      process.exit(0);
    }
  } catch (error) {
    send({ type: 'error', message: String((error as Error)?.stack ?? error) });
  }
});
send({ type: 'ready' });
