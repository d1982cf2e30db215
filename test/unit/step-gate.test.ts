/**
 * The llama.cpp engine's step gate (src/engines/llama/step-gate.ts): a decoding sequence asks for its
 * next token only once every sequence in its step loop has come (or left), so their tokens go to
 * llama.cpp in one batch; a sequence alone never waits.
 */
import { describe, expect, it } from 'vitest';
import { StepGate } from '../../src/engines/llama/step-gate.js';

/** Whether `promise` has settled once pending callbacks have run. */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('StepGate', () => {
  it('a member alone passes at once', () => {
    const gate = new StepGate();
    gate.join();
    expect(gate.arrive()).toBeUndefined();
  });

  it('members wait until the last arrives, then all pass together; the next step gathers again', async () => {
    const gate = new StepGate();
    for (let i = 0; i < 3; i++) gate.join();
    const first = [gate.arrive()!, gate.arrive()!];
    expect(await settled(first[0]!)).toBe(false);
    expect(await settled(first[1]!)).toBe(false);
    const last = gate.arrive()!;
    expect(await settled(Promise.all([...first, last]).then(() => {}))).toBe(true);
    const again = gate.arrive()!;
    expect(await settled(again)).toBe(false);
  });

  it('a member that leaves (its sequence ended) lets the waiting ones pass', async () => {
    const gate = new StepGate();
    for (let i = 0; i < 3; i++) gate.join();
    const waiting = [gate.arrive()!, gate.arrive()!];
    expect(await settled(waiting[0]!)).toBe(false);
    gate.leave();
    expect(await settled(Promise.all(waiting).then(() => {}))).toBe(true);
  });

  it('a member that joins while others wait is waited for', async () => {
    const gate = new StepGate();
    gate.join();
    gate.join();
    const one = gate.arrive()!;
    gate.join();
    const two = gate.arrive()!;
    expect(await settled(Promise.all([one, two]).then(() => {}))).toBe(false);
    await gate.arrive();
    expect(await settled(Promise.all([one, two]).then(() => {}))).toBe(true);
  });
});
