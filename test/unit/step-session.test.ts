/**
 * The decoding-step session (src/engines/onnx/decode/step-session.ts): not loaded until a step reaches the
 * context length it is for; the step that starts the load goes on without it; once loaded, steps at
 * that length take it and shorter ones do not; a failed load is reported once and steps keep the
 * model's own session. The session class here is a stand-in (what is created, with what); the real
 * session is exercised in test/model/fused-attention.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { StepSession } from '../../src/engines/onnx/decode/step-session.js';
import type { OrtSession } from '../../src/engines/onnx/tensors.js';

function sessionClass(fail?: Error) {
  const created: Array<{ file: string; options: Record<string, unknown> }> = [];
  class FakeSession {
    inputNames = [];
    outputNames = [];
    static async create(file: string, options: Record<string, unknown>) {
      created.push({ file, options });
      if (fail) throw fail;
      return new FakeSession();
    }
    async run() {
      return {};
    }
  }
  return { like: new FakeSession() as unknown as OrtSession, created };
}

describe('StepSession', () => {
  it('loads on the first step at its context length, is taken from then on at that length only', async () => {
    const { like, created } = sessionClass();
    const errors: unknown[] = [];
    const steps = new StepSession('/m/step.onnx', like, { intraOpNumThreads: 2 }, 3072, (e) => errors.push(e));
    expect(steps.forStep(3071)).toBeUndefined();
    expect(created).toHaveLength(0);
    expect(steps.forStep(3072)).toBeUndefined(); // starts the load, goes on without it
    expect(created).toEqual([{ file: '/m/step.onnx', options: { intraOpNumThreads: 2 } }]);
    await steps.load();
    expect(steps.loaded).toBe(true);
    const session = steps.forStep(5000);
    expect(session).toBeDefined();
    expect(session).not.toBe(like);
    expect(steps.forStep(100)).toBeUndefined();
    expect(created).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it('a failed load is reported once; steps keep the model\'s session', async () => {
    const { like, created } = sessionClass(new Error('no such file'));
    const errors: unknown[] = [];
    const steps = new StepSession('/m/step.onnx', like, {}, 1, (e) => errors.push(e));
    expect(steps.forStep(10)).toBeUndefined();
    await steps.load();
    expect(steps.forStep(10)).toBeUndefined();
    await steps.load();
    expect(created).toHaveLength(1);
    expect(errors.map((e) => (e as Error).message)).toEqual(['no such file']);
    expect(steps.loaded).toBe(false);
  });
});
