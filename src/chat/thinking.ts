/**
 * Thinking, for a request that asked for it on a model that can: the model's template has a thinking
 * switch (or opens the thought itself) and its thought tags are single tokens. The thought's opening
 * tag is forced as the first token — unless the template's generation prompt already opened it
 * (Qwen3.5, GLM-4.7, DeepSeek R1 / V3.1, MiniMax M2: a second `<think>` would follow) — and its
 * closing tag once the request's budget is spent, or once only the room the constrained answer after
 * it needs is left. Contract: one per turn, worker thread.
 */
import type { ChatRequest } from '../core/types.js';
import { onlyToken, type LogitsMask } from '../engines/sequence.js';
import { familyOf } from './family.js';
import type { ChatModel } from './model.js';

export class ThinkingPlan {
  /** Tokens of the thought, its tags included, once it has closed. */
  thoughtTokens: number | undefined;

  private constructor(
    /** Undefined: the prompt opened the thought. */
    private readonly open: LogitsMask | undefined,
    private readonly close: LogitsMask,
    private readonly closeId: number,
    private readonly budget: number | undefined,
  ) {}

  /**
   * The plan for this request, or undefined when it did not ask for thinking or the model cannot.
   * `opened`: the rendered prompt ends inside a thought its template opened; the plan then exists
   * whatever the request asked, so that the thought closes in time for a constrained answer — at
   * once when the request did not ask for thinking and its answer is constrained (`constrained`).
   */
  static for(model: ChatModel, request: ChatRequest, opened = false, constrained = false): ThinkingPlan | undefined {
    const family = familyOf(model);
    const asked = request.thinking?.enabled === true && family.features.thinkingSwitch;
    if (!family.tags || !(asked || opened)) return undefined;
    const single = (tag: string) => {
      const ids = model.tokenizer.encode(tag, { add_special_tokens: false });
      return ids.length === 1 ? ids[0]! : undefined;
    };
    const open = single(family.tags.open);
    const close = single(family.tags.close);
    if ((open === undefined && !opened) || close === undefined) return undefined;
    return new ThinkingPlan(opened ? undefined : onlyToken(model.vocabSize, open!), onlyToken(model.vocabSize, close), close, asked ? request.thinking?.budgetTokens : constrained ? 0 : undefined);
  }

  /** The thought has closed: what follows is the answer. */
  get done(): boolean {
    return this.thoughtTokens !== undefined;
  }

  /**
   * The mask while the thought is open: its opening tag first (unless the prompt opened it), its
   * closing tag when the budget is spent or `reserve` tokens are all that is left; undefined: the
   * model's choice.
   */
  mask(at: { generated: number; thinkingTokens: number; remaining: number; reserve?: number }): LogitsMask | undefined {
    if (at.generated === 0 && this.open) return this.open;
    if (this.budget !== undefined && at.thinkingTokens >= this.budget) return this.close;
    if (at.reserve !== undefined && at.remaining <= at.reserve + 1) return this.close;
    return undefined;
  }

  /** A token was generated (the `generated`th): the thought closes at its closing tag. */
  accept(id: number, generated: number): void {
    if (!this.done && id === this.closeId) this.thoughtTokens = generated;
  }
}
