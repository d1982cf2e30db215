import path from 'node:path';
import { Worker } from 'node:worker_threads';
const rss = () => Math.round(process.memoryUsage().rss / 1048576);
const gc = () => (globalThis as { gc?: () => void }).gc?.();
const step = async (label: string, fn: () => Promise<unknown>) => { const b = rss(); const r = await fn(); gc(); await new Promise((r) => setTimeout(r, 300)); console.log(label.padEnd(40), `+${rss() - b} MiB`, `(rss ${rss()})`); return r; };
console.log('start', rss());
const which = process.argv[2] ?? 'main';
if (which === 'worker') {
  await step('empty worker thread', async () => { const w = new Worker('setInterval(()=>{}, 1000)', { eval: true }); await new Promise((r) => setTimeout(r, 500)); return w; });
  await step('worker importing transformers', async () => { const w = new Worker(`import('@huggingface/transformers').then(()=>setInterval(()=>{},1000))`, { eval: true }); await new Promise((r) => setTimeout(r, 3000)); return w; });
} else {
  const t: any = await step('import @huggingface/transformers', () => import('@huggingface/transformers'));
  t.env.localModelPath = path.resolve('models') + '/'; t.env.allowRemoteModels = false;
  await step('tokenizer qwen3 (152k vocab)', () => t.AutoTokenizer.from_pretrained('tiny-qwen3-random', { local_files_only: true }));
  await step('model tiny-qwen3 session', () => t.AutoModelForCausalLM.from_pretrained('tiny-qwen3-random', { local_files_only: true, dtype: 'fp32' }));
  await step('tokenizer glove', () => t.AutoTokenizer.from_pretrained('glove-sif-100d', { local_files_only: true }));
}
