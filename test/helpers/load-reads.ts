/**
 * Child process for test/model/eager-reads.test.ts: loads the bundled chat model with
 * transformers.js (with the workaround when PATCH=1) and prints how many bytes this process read
 * from files (/proc/self/io rchar) from before the load until reading has stopped.
 */
import fs from 'node:fs';
import { avoidEagerFileReads } from '../../src/tokenize/local-models.js';
import { CHAT_MODEL, MODELS_DIR } from './paths.js';

if (process.env.PATCH === '1') avoidEagerFileReads();
const { AutoModelForCausalLM, env } = await import('@huggingface/transformers');
const rchar = () => Number(/rchar: (\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8'))![1]);
env.allowRemoteModels = false;
env.localModelPath = `${MODELS_DIR}/`;
const before = rchar();
await AutoModelForCausalLM.from_pretrained(CHAT_MODEL, { dtype: 'fp32' });
// Wait until reading stops for half a second (the eager read finishes in the background). Reading
// /proc/self/io counts too: a few hundred bytes a look.
let last = -Infinity;
while (rchar() - last > 65_536) {
  last = rchar();
  await new Promise((resolve) => setTimeout(resolve, 500));
}
process.stdout.write(JSON.stringify({ bytesRead: last - before }));
process.exit(0);
