/**
 * One sequence's constrained decoding: the grammar's mask before each token, the token accepted
 * after it, and the budget rule. When the tokens left reach what the shortest completion of the
 * output needs (its tokens plus the end-of-sequence token, with a small margin for what one token
 * can add), the guide forces that completion token by token, each checked against the grammar's
 * mask; a token the grammar refuses ends the forcing (the grammar's mask alone then applies). So a
 * constrained output that ends by the token limit still validates, unless the limit is below the
 * shortest valid output. Contract: worker thread, one guide per sequence, not shared.
 */
import { CoreError } from '../../core/errors.js';
import type { LogFn } from '../../core/log.js';
import type { ChatRequest } from '../../core/types.js';
import type { ChatModel } from '../model.js';
import { familyOf, grammarStopIds } from '../family.js';
import { featuresOf } from '../prompt.js';
import { allows, onlyToken } from '../../engines/sequence.js';
import { TextStream } from '../text-stream.js';
import { planConstraint, type Constraint, type ConstraintTracker } from './constraint.js';
import { GrammarCompileError, longestTokenChars, matcherFor, type Matcher } from './xgrammar.js';

/**
 * Tokens forcing starts early by, beyond the completion's own: what one free token can add to it,
 * and the last bytes of a character the text may end inside (up to three tokens) when it is due.
 */
const MARGIN_TOKENS = 5;

export class Guide {
  private forcing: number[] | null = null;
  private readonly stream: TextStream;

  private constructor(
    private readonly loaded: ChatModel,
    private readonly matcher: Matcher,
    private readonly tracker: ConstraintTracker,
    /** Tokens the whole constrained output needs at least (its shortest form and the end token). */
    readonly reserve: number,
    private readonly reason: 'output' | 'tool',
  ) {
    // The family's markers kept, as the turn decodes (the call syntax the tracker follows has them).
    this.stream = new TextStream(familyOf(loaded).decode, []);
  }

  /**
   * Compiles (or finds cached) the constraint's grammar. A `pattern` the compiler cannot parse refuses
   * the request (the schema's fault); any other failure, after the schema checks of ./constraint.ts,
   * is this server's: an internal error, its cause logged, never shown to the client.
   */
  static async create(loaded: ChatModel, constraint: Constraint, reason: 'output' | 'tool'): Promise<Guide> {
    let matcher: Matcher;
    try {
      // The grammar ends where the turn does: not on a message end the model lists among its end
      // tokens (harmony's <|end|> after the analysis), or the call that follows is unconstrained.
      matcher = await matcherFor(loaded, loaded.vocabSize, constraint.source, grammarStopIds(loaded));
    } catch (error) {
      if (error instanceof GrammarCompileError && error.regex) {
        const problem = `a pattern cannot be used: ${error.message.slice(0, 200)}`;
        throw new CoreError('schema_unsupported', `The schema's ${problem}`, { reason, feature: 'pattern', problem });
      }
      const why = error instanceof Error ? error.message : String(error);
      throw new CoreError('internal', `The grammar compiler failed on a schema the checks let through: ${why.slice(0, 300)}`, { reason });
    }
    const tracker = constraint.tracker();
    const shortest = tracker.completion();
    const reserve = (shortest ? loaded.tokenizer.encode(shortest, { add_special_tokens: false }).length : 0) + 1 + MARGIN_TOKENS;
    return new Guide(loaded, matcher, tracker, reserve, reason);
  }

  /**
   * The tokens allowed next, `remaining` tokens (this one included) before the limit; null when the
   * output is complete and the grammar allows only an end token the model's vocabulary does not hold
   * (the generation ends there). A grammar that needs a token the vocabulary lacks, mid-output, refuses
   * the request (schema_unsupported) rather than sampling from nothing.
   */
  async mask(remaining: number): Promise<Uint32Array | null> {
    const allowed = await this.matcher.mask();
    if (!allowed.some((word) => word !== 0)) {
      if (this.tracker.completion() === '') return null;
      throw new CoreError('schema_unsupported', "The model's vocabulary has no token the grammar allows next", { reason: this.reason });
    }
    // Inside a character the completion (worked out on whole characters) cannot start yet: the
    // model writes the character's last bytes first, under the grammar.
    if (this.forcing === null && !this.stream.incomplete) this.forcing = this.completionToForce(remaining);
    const next = this.forcing?.[0];
    if (next === undefined) return allowed;
    if (!allows(allowed, next)) {
      // The completion was wrong for the grammar's state: this token is the model's, under the
      // grammar; the completion is worked out again at the next one.
      this.forcing = null;
      return allowed;
    }
    return onlyToken(allowed.length * 32, next);
  }

  /** The chosen token: the grammar advances, and the tracker reads its text. */
  accept(id: number): void {
    this.matcher.accept(id);
    if (this.forcing?.[0] === id) this.forcing.shift();
    this.tracker.push(this.stream.push(id).delta);
  }

  dispose(): void {
    this.matcher.dispose();
  }

  /** The completion and an end token, once the tokens left are about what they need; null before. */
  private completionToForce(remaining: number): number[] | null {
    const rest = this.tracker.completion();
    if (!rest) return null; // complete (or unknown): nothing to force
    // UTF-8 bytes bound the token count from above (byte-level vocabularies): skip encoding early on.
    if (Buffer.byteLength(rest) + 1 + MARGIN_TOKENS < remaining) return null;
    const ids = this.loaded.tokenizer.encode(rest, { add_special_tokens: false });
    if (ids.length + 1 + MARGIN_TOKENS < remaining) return null;
    return [...ids, grammarStopIds(this.loaded)[0]!];
  }
}

/**
 * The guide for a request whose output is constrained (an output schema, a forced or strict tool
 * call), its grammar compiled; undefined when the output is free. Built before the reply starts: a
 * schema it cannot express, or an engine that cannot constrain, refuses the request.
 */
export async function guideFor(model: ChatModel, request: ChatRequest, options: { constrains: boolean; log?: LogFn }): Promise<Guide | undefined> {
  const features = featuresOf(model);
  const format = features.toolFormat === 'auto' && features.auto?.calls ? features.auto.calls : features.toolFormat;
  // What the output can hold at most: counts beyond it cost a compile and bind nothing.
  const reach = request.maxTokens * longestTokenChars(model, model.vocabSize);
  const constraint = planConstraint(request, format, false, reach);
  if (!constraint) return undefined;
  const reason = request.output ? 'output' : 'tool';
  if (!options.constrains) {
    throw new CoreError('schema_unsupported', 'This model is served by transformers.js generate (its export is not one the batch decoder drives), which has no constrained decoding', { reason });
  }
  const create = (c: Constraint) => {
    for (const r of c.relaxed) options.log?.('warn', `tool ${r.tool}: input schema feature ${r.feature} at '${r.path || '/'}' is not enforced by the grammar (the tool is not strict)`);
    return Guide.create(model, c, reason);
  };
  try {
    return await create(constraint);
  } catch (error) {
    // A schema that is not strict is never refused: without its value checks, again.
    const relaxable = request.tools?.some((t) => !t.strict) || request.output?.strict === false;
    const loose = relaxable ? planConstraint(request, format, true, reach) : undefined;
    if (!loose) throw error;
    return create(loose);
  }
}
