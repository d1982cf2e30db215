/**
 * One step for all: the llama.cpp engine's decoding sequences ask for their next tokens together
 * (./runner.ts), so that node-llama-cpp decodes them in one batch.
 *
 * Contract: worker thread; one per engine.
 */

/**
 * Gathers the decoding sequences' next steps, so that node-llama-cpp sends them to llama.cpp in one
 * batch, as llama-server steps all its slots at once. node-llama-cpp decodes whatever is queued when
 * its previous batch's sampling is done: the sequence whose sample came back last was still on its
 * way through the generator's promises, and went to a batch of its own (measured with 8 streams:
 * steps of 7 tokens, 56 steps for 47 tokens each). Each sequence in its step loop (a member) waits
 * here before asking for its next token, until every member has come, or left; alone, it does not wait.
 */
export class StepGate {
  private members = 0;
  private waiting: Array<() => void> = [];

  join(): void {
    this.members++;
  }

  leave(): void {
    this.members--;
    this.open();
  }

  /** Resolves when every member has arrived (at once when there is no other). */
  arrive(): Promise<void> | undefined {
    if (this.members <= 1 && this.waiting.length === 0) return undefined;
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.open();
    });
  }

  private open(): void {
    if (this.waiting.length === 0 || this.waiting.length < this.members) return;
    const ready = this.waiting;
    this.waiting = [];
    for (const resolve of ready) resolve();
  }
}
