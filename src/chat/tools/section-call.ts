/**
 * Calls written as a marked section — an opening marker, the calls in the family's own form, a
 * closing marker — read by finding the closing marker, then handing the section's body to the
 * family's reader (./family-calls.ts). Kimi K2, GLM 4.5+, DeepSeek R1 / V3.1 and V3.2 DSML,
 * MiniMax M2 and LFM2 write their calls so.
 *
 * The scan only looks for the closing marker (held back across chunks while it may be partial), so
 * it is linear in the call's length; a body is parsed once. A section the generation cut off before
 * its closing marker is still read: the reader accepts it if what it holds is complete.
 */
import { CallScanner, type ParsedCall, type StepResult } from './scan.js';

/** Reads one section's body (between the markers) into calls, or says why it is none. */
export type SectionReader = (body: string) => ParsedCall[] | { reason: string };

export class SectionScanner extends CallScanner {
  private bodyEnd = -1;

  constructor(
    private readonly openerLength: number,
    private readonly closer: string,
    private readonly read: SectionReader,
  ) {
    super(openerLength);
  }

  protected step(w: string, final: boolean): StepResult {
    // No closing marker (an analysed format whose section runs to the end of the answer).
    if (this.closer === '' && !final) return null;
    const at = this.closer === '' ? -1 : w.indexOf(this.closer);
    if (at !== -1) {
      this.bodyEnd = this.base + at;
      return { kind: 'end', at: at + this.closer.length };
    }
    if (!final) return Math.max(0, w.length - this.closer.length + 1);
    this.bodyEnd = this.base + w.length;
    return { kind: 'end', at: w.length };
  }

  interpret(markup: string): ParsedCall[] | { reason: string } {
    const calls = this.read(markup.slice(this.openerLength, this.bodyEnd));
    if (!('reason' in calls) && calls.length === 0) return { reason: 'no call in the section' };
    return calls;
  }
}
