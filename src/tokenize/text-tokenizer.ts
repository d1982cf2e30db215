/**
 * A tokenizer as the chat layer uses it (`TextTokenizer`), and one built without transformers.js
 * (`PlainTokenizer`) for GGUF models.
 *
 * A GGUF model's worker needs a tokenizer and nothing else of transformers.js, whose import brings
 * its whole bundle (onnxruntime-web's included), onnxruntime-node and sharp: measured in a worker
 * thread, 20 MiB of RSS kept (58 -> 77 MiB) and 36 more at the import's peak. `PlainTokenizer` is
 * @huggingface/tokenizers' `Tokenizer` (the library transformers.js 4.x bundles a copy of: the same
 * 0.2.0 release, so the same tokens) behind the part of transformers.js's `PreTrainedTokenizer` the
 * server uses, done the way that class does it (its constructor's special tokens and template, and
 * apply_chat_template's context). ONNX models keep transformers.js's class, which their engine
 * needs anyway; both satisfy `TextTokenizer`.
 */
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { TEMPLATE_CONTEXT } from '../models/template-context.js';

/** What the chat layer, the prompt encoder and the token routes use of a tokenizer. */
export interface TextTokenizer {
  encode(text: string, options?: { add_special_tokens?: boolean }): number[];
  decode(ids: number[], options?: { skip_special_tokens?: boolean }): string;
  get_vocab(): Map<string, number>;
  readonly all_special_ids: number[];
  readonly all_special_tokens: string[];
  /** Renders only (`tokenize: false`), as renderChatTemplate asks. */
  apply_chat_template(conversation: object[], options: object): unknown;
}

/** tokenizer_config.json's special-token keys that apply_chat_template passes to the template (transformers.js SPECIAL_TOKEN_ATTRIBUTES). */
const SPECIAL_TOKEN_KEYS = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'] as const;

/** A special token of tokenizer_config.json: a string, or an AddedToken object (its content). */
function tokenOf(config: Record<string, unknown>, key: string): string | null {
  const value = config[key];
  if (!value) return null;
  if (typeof value === 'string') return value;
  const added = value as { __type?: string; content?: string };
  if (added.__type === 'AddedToken' && typeof added.content === 'string') return added.content;
  throw new Error(`tokenizer_config.json: ${key} is not a token`);
}

export class PlainTokenizer implements TextTokenizer {
  /** The parsed tokenizer.json until ./drop-source.ts lets go of it (the name transformers.js gives it). */
  _tokenizerJSON: unknown;
  /** The library's tokenizer (the name transformers.js gives it: ./prompt-encoder.ts and others reach into it). */
  readonly _tokenizer: Tokenizer;
  readonly config: Record<string, unknown>;
  chat_template: string | Record<string, string> | null;
  readonly bos_token: string | null;
  readonly eos_token: string | null;
  readonly all_special_ids: number[];
  readonly all_special_tokens: string[];
  /** tokenizer_config.json's special tokens, as every render passes them to the template. */
  private readonly specialTokens: Record<string, string>;
  private readonly compiled = new Map<string, Template>();

  constructor(tokenizerJSON: Record<string, unknown>, config: Record<string, unknown>) {
    this._tokenizerJSON = tokenizerJSON;
    this._tokenizer = new Tokenizer(tokenizerJSON, config);
    this.config = config;
    const template = config.chat_template;
    this.chat_template = Array.isArray(template)
      ? Object.fromEntries((template as Array<{ name: string; template: string }>).map(({ name, template: source }) => [name, source]))
      : typeof template === 'string' ? template : null;
    const special = [...this._tokenizer.get_added_tokens_decoder().values()].filter((token) => token.special);
    this.all_special_ids = special.map((token) => token.id);
    this.all_special_tokens = special.map((token) => token.content);
    this.specialTokens = Object.fromEntries(SPECIAL_TOKEN_KEYS.flatMap((key) => {
      const token = tokenOf(config, key);
      return token ? [[key, token]] : [];
    }));
    this.bos_token = this.specialTokens.bos_token ?? null;
    this.eos_token = this.specialTokens.eos_token ?? null;
  }

  encode(text: string, { add_special_tokens = true }: { add_special_tokens?: boolean } = {}): number[] {
    return this._tokenizer.encode(text, { add_special_tokens }).ids;
  }

  decode(ids: number[], { skip_special_tokens = false }: { skip_special_tokens?: boolean } = {}): string {
    return this._tokenizer.decode(ids, { skip_special_tokens });
  }

  get_vocab(): Map<string, number> {
    return this._tokenizer.get_vocab();
  }

  /** The rendered text (never tokens): the template's context as transformers.js builds it. */
  apply_chat_template(conversation: object[], options: object): string {
    const { chat_template = null, tools = null, documents = null, add_generation_prompt = false, tokenize: _tokenize, ...context } = options as Record<string, unknown>;
    const source = this.templateSource(chat_template as string | null, tools !== null);
    let template = this.compiled.get(source);
    if (template === undefined) this.compiled.set(source, (template = new Template(source)));
    return template.render({ messages: conversation, add_generation_prompt, tools, documents, ...this.specialTokens, ...context });
  }

  /** transformers.js's get_chat_template: the source given, a template named so, or the model's own. */
  private templateSource(given: string | null, withTools: boolean): string {
    const own = this.chat_template;
    if (own !== null && typeof own === 'object') {
      if (given !== null && Object.hasOwn(own, given)) return own[given]!;
      if (given !== null) return given;
      const named = withTools && TEMPLATE_CONTEXT.toolsTemplate in own ? own[TEMPLATE_CONTEXT.toolsTemplate] : own.default;
      if (named === undefined) throw new Error(`This model has several chat templates and none is the default: ${Object.keys(own).sort().join(', ')}`);
      return named;
    }
    if (given !== null) return given;
    if (own === null) throw new Error('This model has no chat template');
    return own;
  }
}
