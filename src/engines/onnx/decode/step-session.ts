/**
 * The second session of a chat model whose graph has a decoding-step form
 * (src/engines/onnx/graph/in-place-decode.ts): decoding steps at long context run through it, everything
 * else (prefill chunks, short contexts) through the model's own session (./scheduler.ts).
 *
 * Loaded on first need, not with the model: a session holds its own prepacked weights (measured on
 * the SmolLM2-135M-shape subject: about 120 MiB of RSS in q4, 520 MiB in fp32; without prepacking
 * an fp32 step took 32% longer and a q4 step 10x), which only long contexts repay. Until it
 * is loaded, and for good if it fails to load (the reason is logged once), steps keep the model's
 * own session. The load holds this thread (onnxruntime-node builds the session on it: 0.8 s for that
 * subject), so the worker's running streams pause once, at the first step that reaches the length. It is created by the class of that session, so both come from the one onnxruntime
 * binding transformers.js loaded, with the same session options.
 *
 * Contract: worker thread, one owner (the model's decoder).
 */
import type { OrtSession } from '../tensors.js';

type SessionClass = { create(file: string, options: Record<string, unknown>): Promise<OrtSession> };

export class StepSession {
  private session?: OrtSession;
  private loading?: Promise<void>;

  /**
   * `like`: the model's own session (its class creates this one); `minContext`: the context length
   * (columns of the step's attention mask) from which steps use it.
   */
  constructor(
    private readonly file: string,
    private readonly like: OrtSession,
    private readonly options: Record<string, unknown>,
    readonly minContext: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** The session for a step over `context` columns: this one when it is loaded and the context long enough (the first ask starts the load). */
  forStep(context: number): OrtSession | undefined {
    if (context < this.minContext) return undefined;
    void this.load();
    return this.session;
  }

  /** Loads the session (once); resolves when it is usable or has failed. */
  load(): Promise<void> {
    this.loading ??= (this.like.constructor as unknown as SessionClass).create(this.file, this.options).then(
      (session) => {
        this.session = session;
      },
      (error) => this.onError(error),
    );
    return this.loading;
  }

  /** Releases the session once its load has settled (a later step would load it again). */
  async release(): Promise<void> {
    await this.loading;
    const session = this.session;
    this.session = undefined;
    this.loading = undefined;
    await session?.release?.();
  }

  get loaded(): boolean {
    return this.session !== undefined;
  }
}
