/**
 * The bench process's side of ./llama-cpp-child.ts: node-llama-cpp's prebuilt CPU binary driving a
 * GGUF file in a process of its own (its threads, memory and peak RSS its own), over IPC.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export interface Run { ttftMs: number; decodeTps: number }

export class LlamaChild {
  private constructor(private readonly child: ChildProcess, readonly flashAttention: boolean) {}

  /** `contextSize`: tokens of each sequence (node-llama-cpp gives every sequence its own `contextSize` cells). */
  static async start(options: { modelPath: string; contextSize: number; threads: number; sequences: number }): Promise<LlamaChild> {
    const child = fork(path.resolve('scripts/bench/llama-cpp-child.ts'), { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    await LlamaChild.next(child, 'ready');
    child.send({ type: 'load', ...options });
    const loaded = await LlamaChild.next(child, 'loaded');
    return new LlamaChild(child, Boolean(loaded.flashAttention));
  }

  private static next(child: ChildProcess, type: string): Promise<any> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: any) => {
        if (m.type === 'error') reject(new Error(`llama.cpp child: ${m.message}`));
        else if (m.type === type) resolve(m);
        else return;
        child.off('message', onMessage);
        child.off('exit', onExit);
      };
      const onExit = (code: number) => reject(new Error(`llama.cpp child exited with ${code}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  }

  async run(prompts: number[][], decode: number): Promise<{ runs: Run[]; aggregateTps: number }> {
    this.child.send({ type: 'run', prompts, decode });
    return LlamaChild.next(this.child, 'result');
  }

  get pid(): number {
    return this.child.pid!;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.send({ type: 'exit' });
    });
  }
}

