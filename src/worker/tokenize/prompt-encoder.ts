/**
 * Encodes a rendered chat prompt in which message text stands in for itself: a special-token string
 * inside a message (`<|im_end|>` typed by an end user) must become ordinary text tokens, never the
 * control token, or a user could forge turn and system boundaries. transformers.js's tokenizer has
 * no option for that (Python's `split_special_tokens`): its added-token splitter matches special
 * tokens anywhere. So the caller replaces each special-token string in the messages by a placeholder
 * before rendering the template, and this encoder puts the literal text back after the splitter has
 * run, just before pre-tokenization: the splitter sees only the template's special tokens, the
 * pre-tokenizer and the model see the text as written. Runs in a worker thread; one per tokenizer.
 *
 * It reaches into the tokenizer object of transformers.js 4.x (`_tokenizer`, its `pre_tokenizer`);
 * `PromptEncoder.for` checks that shape once and fails loudly if a release changes it.
 */
import type { PreTrainedTokenizer } from '@huggingface/transformers';

type PreTokenize = (text: string, options?: { section_index?: number }) => string[];

/** The part of @huggingface/tokenizers' Tokenizer this module relies on. */
interface InnerTokenizer {
  pre_tokenizer: PreTokenize | null;
  encode(text: string, options: { add_special_tokens: boolean }): { ids: number[] };
}

/** Placeholder -> the literal text it stands for. */
export type Literals = ReadonlyMap<string, string>;

export class PromptEncoder {
  private static readonly encoders = new WeakMap<PreTrainedTokenizer, PromptEncoder>();

  /** Special-token strings of the tokenizer (the ones a message must not produce). */
  readonly specialTokens: readonly string[];
  /** The tokenizer with a pre-tokenizer that first puts `literals` back. */
  private readonly view: InnerTokenizer;
  private literals: Literals | null = null;

  static for(tokenizer: PreTrainedTokenizer): PromptEncoder {
    let encoder = PromptEncoder.encoders.get(tokenizer);
    if (!encoder) PromptEncoder.encoders.set(tokenizer, (encoder = new PromptEncoder(tokenizer)));
    return encoder;
  }

  private constructor(private readonly tokenizer: PreTrainedTokenizer) {
    const inner = (tokenizer as unknown as { _tokenizer?: InnerTokenizer })._tokenizer;
    if (!inner || typeof inner.encode !== 'function' || !('pre_tokenizer' in inner)) {
      throw new Error('PromptEncoder: this transformers.js release does not have the tokenizer shape it was written for');
    }
    this.specialTokens = [...new Set(tokenizer.all_special_tokens)].filter((t) => t.length > 0);
    const preTokenize = inner.pre_tokenizer;
    // A view that shares everything with the tokenizer but its pre-tokenizer: no library object changes.
    const view = Object.create(inner) as InnerTokenizer;
    view.pre_tokenizer = (text, options) => {
      const restored = this.literals ? restore(text, this.literals) : text;
      return preTokenize ? preTokenize(restored, options) : [restored];
    };
    this.view = view;
  }

  /** Token ids of `text`, each placeholder of `literals` tokenized as the literal text it stands for. */
  encode(text: string, literals?: Literals): number[] {
    if (!literals || literals.size === 0) return this.tokenizer.encode(text, { add_special_tokens: false });
    this.literals = literals;
    try {
      return this.view.encode(text, { add_special_tokens: false }).ids;
    } finally {
      this.literals = null;
    }
  }
}

function restore(text: string, literals: Literals): string {
  let out = text;
  for (const [placeholder, literal] of literals) if (out.includes(placeholder)) out = out.split(placeholder).join(literal);
  return out;
}
