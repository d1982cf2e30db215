/** TEI's bodies -> the core's requests. */
import type { EmbedInput, EmbedRequest, ScoreRequest, Truncate } from '../../../core/types.js';
import type { TeiDecodeBody, TeiEmbedBody, TeiRerankBody } from './schema.js';

/**
 * TEI's truncation: off unless asked for (TEI's default, whatever the server's setting); `left`
 * keeps the end of the text (of a cross-encoder's pair, the document's end: its query is never cut).
 */
const teiTruncate = (body: { truncate?: boolean | null; truncation_direction?: 'left' | 'right' | null }): Truncate =>
  body.truncate ? (body.truncation_direction === 'left' ? 'left' : true) : false;

export function toScoreRequest(body: TeiRerankBody, model: string): ScoreRequest {
  return { model, queries: [body.query], documents: body.texts, truncate: teiTruncate(body) };
}

/** One text, one list of token ids, or a list of either. */
export function toEmbedRequest(body: TeiEmbedBody, model: string): EmbedRequest {
  const inputs: EmbedInput[] = typeof body.inputs === 'string' ? [body.inputs] : typeof body.inputs[0] === 'number' ? [body.inputs as number[]] : (body.inputs as EmbedInput[]);
  return { model, inputs, truncate: teiTruncate(body), normalize: body.normalize ?? true, ...(body.dimensions != null ? { dimensions: body.dimensions } : {}) };
}

/** One list of ids, or a list of them. */
export const idLists = (body: TeiDecodeBody): number[][] => (body.ids.length > 0 && Array.isArray(body.ids[0]) ? (body.ids as number[][]) : [body.ids as number[]]);

/**
 * One task after another: a TEI body may hold 2,048 inputs, and as many tasks at once would exceed
 * the model's admission bound (its queue) and be refused as overloaded.
 */
export async function eachInTurn<T, R>(items: readonly T[], work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i++) results.push(await work(items[i]!, i));
  return results;
}
