/**
 * Thinking, for a request that asked for it on a model that can: the model's template has a thinking
 * switch and its tags are single tokens. The thought's opening tag is forced as the first token, its
 * closing tag once the request's budget is spent, or once only the room the constrained answer after
 * it needs is left. Contract: one per turn, worker thread.
 */
import type { ChatRequest } from '../core/types.js';
import { onlyToken, type LogitsMask } from '../engines/sequence.js';
import { THINK_CLOSE, THINK_OPEN } from './answer.js';
import type { ChatModel } from './model.js';
import { featuresOf } from './prompt.js';

export class ThinkingPlan {
  /** Tokens of the thought, its tags included, once it has closed. */
  thoughtTokens: number | undefined;

  private constructor(
    private readonly open: LogitsMask,
    private readonly close: LogitsMask,
    private readonly closeId: number,
    private readonly budget: number | undefined,
  ) {}

  /** The plan for this request, or undefined when it did not ask for thinking or the model cannot. */
  static for(model: ChatModel, request: ChatRequest): ThinkingPlan | undefined {
    if (!request.thinking?.enabled || !featuresOf(model).thinkingSwitch) return undefined;
    const single = (tag: string) => {
      const ids = model.tokenizer.encode(tag, { add_special_tokens: false });
      return ids.length === 1 ? ids[0]! : undefined;
    };
    const open = single(THINK_OPEN);
    const close = single(THINK_CLOSE);
    if (open === undefined || close === undefined) return undefined;
    return new ThinkingPlan(onlyToken(model.vocabSize, open), onlyToken(model.vocabSize, close), close, request.thinking.budgetTokens);
  }

  /** The thought has closed: what follows is the answer. */
  get done(): boolean {
    return this.thoughtTokens !== undefined;
  }

  /**
   * The mask while the thought is open: its opening tag first, its closing tag when the budget is
   * spent or `reserve` tokens are all that is left; undefined: the model's choice.
   */
  mask(at: { generated: number; thinkingTokens: number; remaining: number; reserve?: number }): LogitsMask | undefined {
    if (at.generated === 0) return this.open;
    if (this.budget !== undefined && at.thinkingTokens >= this.budget) return this.close;
    if (at.reserve !== undefined && at.remaining <= at.reserve + 1) return this.close;
    return undefined;
  }

  /** A token was generated (the `generated`th): the thought closes at its closing tag. */
  accept(id: number, generated: number): void {
    if (!this.done && id === this.closeId) this.thoughtTokens = generated;
  }
}
