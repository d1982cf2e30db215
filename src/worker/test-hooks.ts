/**
 * Test hooks (src/core/hooks.ts InferenceHooks.fault and .script), applied in one place: a wrapper
 * around the engine a chat task runs on, made at the worker's entry when the task carries them.
 * Nothing test-only runs inside the chat turn or the engine.
 *
 * - `fault`: crash the worker, abort its process, hang in it, or throw, once the prompt is accepted (when the turn hands
 *   the engine its sequence); or hold the thread inside this sequence's first forward pass (its
 *   prefill), as a very long prompt would.
 * - `script`: the text the model is made to write, then its end token. The model runs as usual; the
 *   sequence's logits mask allows only the script's next token (in place of any grammar or thinking
 *   mask), so a client's whole turn is deterministic whatever the weights.
 */
import type { GenerationTestHooks } from '../core/hooks.js';
import { onlyToken, type SequenceEngine } from '../engines/sequence.js';
import type { ChatModel } from '../chat/model.js';
import { markBusy } from './protocol.js';

/** How long an `abort` fault's forward pass runs before the process ends. */
const ABORT_AFTER_MS = 1_000;

/** Holds this thread, as one long synchronous operation does. */
const block = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

export function withTestHooks(engine: SequenceEngine, model: ChatModel, hooks: GenerationTestHooks, control: Int32Array): SequenceEngine {
  const { fault, script } = hooks;
  const forced = script === undefined ? undefined : [...model.tokenizer.encode(script, { add_special_tokens: false }), model.eosTokenIds[0]!];
  return {
    constrains: engine.constrains,
    lookup: (ids, maxTokens, options) => engine.lookup(ids, maxTokens, options),
    ...(engine.checkImages ? { checkImages: (images) => engine.checkImages!(images) } : {}),
    ...(engine.promptCacheStats ? { promptCacheStats: () => engine.promptCacheStats!() } : {}),
    run(spec, prefix) {
      if (fault === 'abort') {
        // The process ends during the sequence's first forward pass, as a crash in native code does
        // (process.abort() is refused in a worker thread; a signal does the same). The pass runs a
        // moment first: a process pool's parent hears the prompt was accepted (the `start` event it
        // sent on) before the crash, as it would before a real one, and does not run it again.
        return engine.run({ ...spec, busy: (on: boolean) => (spec.busy?.(on), on ? (block(ABORT_AFTER_MS), process.kill(process.pid, 'SIGKILL')) : undefined) }, prefix);
      }
      if (typeof fault === 'string') {
        // A fault is this task's own work, in a forward pass as far as the watchdog can tell: a
        // worker it kills must not run it again, and a hang is a stuck pass.
        markBusy(control, true);
        prefix?.release?.();
        if (fault === 'crash') process.exit(70);
        if (fault === 'hang') block(10 * 60_000);
        throw new Error('injected fault');
      }
      const slowPrefillMs = fault?.slowPrefillMs ?? 0;
      let prefilled = false;
      let generated = 0;
      return engine.run({
        ...spec,
        ...(slowPrefillMs > 0 ? {
          busy: (on: boolean) => {
            spec.busy?.(on);
            if (on && !prefilled) block(slowPrefillMs);
            prefilled ||= on;
          },
        } : {}),
        ...(forced ? {
          logitsMask: () => onlyToken(model.vocabSize, forced[Math.min(generated, forced.length - 1)]!),
          onToken: (id: number) => (generated++, spec.onToken(id)),
        } : {}),
      }, prefix);
    },
  };
}
