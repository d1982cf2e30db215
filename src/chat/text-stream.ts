/**
 * Turns generated token ids into text deltas that are safe to show: never a broken multi-byte
 * character, never text that may turn out to be part of a stop string. Pure and thread-agnostic;
 * the worker drives it once per generated token.
 */

export type Decode = (ids: number[]) => string;

/** What a decoder makes of bytes that do not (yet) form a character. */
const REPLACEMENT = '\uFFFD';

/** The text without its trailing run of U+FFFD (an incomplete character, or invalid bytes before it). */
function wholeCharacters(text: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === REPLACEMENT) end--;
  return text.slice(0, end);
}

export interface StreamStep {
  /** Text that may now be shown; empty when everything new is held back. */
  delta: string;
  /** The stop string that just matched, if any; generation must stop. */
  stopString: string | null;
}

export class TextStream {
  private readonly ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;
  /** All decoded text so far (may end with held-back text). */
  private text = '';
  /** How much of the open window's text (tokens from `readOffset` on) is already in `text`. */
  private pendingShown = 0;
  /** How much of `text` has been handed out. */
  private emitted = 0;
  private stopped: string | null = null;

  constructor(
    private readonly decode: Decode,
    private readonly stopStrings: string[],
  ) {}

  /** Adds one token; returns what may be shown now. */
  push(id: number): StreamStep {
    if (this.stopped !== null) return { delta: '', stopString: this.stopped };
    this.ids.push(id);
    // Decode a window that starts a few tokens back so that byte-level pieces combine correctly
    // (the prefix/read offset scheme of text-generation-inference).
    const prev = this.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const fresh = this.decode(this.ids.slice(this.prefixOffset)).slice(prev.length);
    if (!fresh.endsWith(REPLACEMENT)) {
      this.text += fresh.slice(this.pendingShown);
      this.pendingShown = 0;
      this.prefixOffset = this.readOffset;
      this.readOffset = this.ids.length;
    } else {
      // The new tokens end inside a character (a token such as "space + first byte of a CJK
      // character"). The whole characters in front of it are final: a UTF-8 decoder never revises
      // what it emitted before the incomplete tail. Take them now, so that a stop string they
      // complete is found at this token; the window stays open until the character completes.
      const whole = wholeCharacters(fresh);
      if (whole.length > this.pendingShown) {
        this.text += whole.slice(this.pendingShown);
        this.pendingShown = whole.length;
      }
    }
    return this.release(false);
  }

  /**
   * Generation ended: everything not part of a stop string may be shown. Bytes of a character the
   * output limit cut off are dropped: the text holds whole characters only (the tokens still count).
   * (So is a U+FFFD at the very end that stands for invalid bytes: it cannot be told from a cut one.)
   */
  finish(): StreamStep {
    return this.release(true);
  }

  /** The last tokens end inside a character (their text is held until it completes). */
  get incomplete(): boolean {
    return this.readOffset < this.ids.length;
  }

  /** The final text: everything shown, stop string excluded. */
  get shownText(): string {
    return this.text.slice(0, this.emitted);
  }

  private release(final: boolean): StreamStep {
    if (this.stopped !== null) return { delta: '', stopString: this.stopped };
    // A match can only start at or after `emitted`: any earlier start would have been held back.
    let matchAt = -1;
    let matched: string | null = null;
    for (const stop of this.stopStrings) {
      const at = this.text.indexOf(stop, this.emitted);
      if (at !== -1 && (matchAt === -1 || at < matchAt)) {
        matchAt = at;
        matched = stop;
      }
    }
    if (matched !== null) {
      const delta = this.text.slice(this.emitted, matchAt);
      this.emitted = matchAt;
      this.text = this.text.slice(0, matchAt);
      this.stopped = matched;
      return { delta, stopString: matched };
    }
    const hold = final ? 0 : this.heldBack();
    const end = this.text.length - hold;
    const delta = end > this.emitted ? this.text.slice(this.emitted, end) : '';
    this.emitted = Math.max(this.emitted, end);
    return { delta, stopString: null };
  }

  /** Length of the longest suffix of the text that is a proper prefix of some stop string. */
  private heldBack(): number {
    let longest = 0;
    const tail = this.text.slice(this.emitted);
    for (const stop of this.stopStrings) {
      for (let k = Math.min(stop.length - 1, tail.length); k > longest; k--) {
        if (tail.endsWith(stop.slice(0, k))) {
          longest = k;
          break;
        }
      }
    }
    return longest;
  }
}
