/**
 * The graph a model is served with: its export, rewritten by the rewrites asked for (chat models),
 * written beside it with its weights referenced in place, and reused while the export is unchanged.
 *
 * - last-position logits (./last-logits.ts): logits for the last position only;
 * - fused attention (./fused-attention.ts): each layer's attention as one GroupQueryAttention; on an
 *   onnxruntime-genai model-builder export, whose attention already is, the same contract instead
 *   (./model-builder-attention.ts: position ids, left padding, new keys and values as outputs). The
 *   decoder of such a graph appends the new keys and values to a cache it keeps, so the present.*
 *   outputs are dropped (nobody fetches them). GroupQueryAttention still writes each layer's present
 *   copy, and onnxruntime holds them all until the pass returns, with or without a consumer or an
 *   arena (measured at 9472 cache columns of the SmolLM2-135M shape: a 2-layer model's pass peaks 29
 *   MiB above its cache, an 8-layer one's 109, the 30-layer one's 415): every pass through
 *   GroupQueryAttention costs the cache's size again. A second graph beside it for decoding steps
 *   alone, reading the cache in place (./in-place-decode.ts: `decodeStepFile`), has no such copy.
 *
 * Weights in place: onnxruntime copies an inline initializer out of the parsed protobuf into memory
 * of its own (anonymous memory, about the size of the weights, per session), but maps external data
 * from its file (onnxruntime/core/framework/session_state_utils.cc: "for external initializer on CPU
 * we will use mmap"; any offset, the mapping starts at the page below it). So the derived graph
 * references the export's inline weights by offset: they become file-backed pages, read on first
 * touch, shared by every worker and with the page cache, and reclaimable. Measured on the bundled
 * GloVe model (one 134 MiB table that a Gather reads a few rows of): a session costs 26 MiB of RSS
 * instead of 160 MiB. That is why a graph is written even when no rewrite applies (or none is asked
 * for: `model.in-place`, embedding models), unless the export keeps its weights in external data already.
 *
 * Each rewrite is skipped on its own, with the reason, when it does not recognise the graph. The
 * derived file is named after the rewrites asked for (so a later start finds it without decoding the
 * export again) and records in its metadata which ones applied and why the others did not.
 */
import fs from 'node:fs';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import onnxProto from 'onnx-proto';
import { DTYPE_SUFFIX } from '../../../models/manifest.js';
import { FUSED_ATTENTION_BASE, IN_PLACE_BASE, LAST_LOGITS_BASE } from '../../../models/derived-files.js';
import type { ModelInfo } from '../../../models/registry.js';
import { fuseAttention, type AttentionShape } from './fused-attention.js';
import { decodeStepGraph } from './in-place-decode.js';
import { isModelBuilderForm, openModelBuilderAttention } from './model-builder-attention.js';
import { dropPresentOutputs, halfKvCache } from './graph-edit.js';
import { encodeDerived, inlineWeightBytes, readMetadata, sliceLastPosition, STAMP_KEY, stampOf } from './last-logits.js';

const { onnx } = onnxProto;

export interface GraphRewrites {
  lastLogits: boolean;
  fusedAttention: boolean;
  /** With fused attention, a float32 KV cache stored as float16 (./graph-edit.ts halfKvCache). */
  halfKvCache?: boolean;
}

export interface PreparedGraph {
  /** Base name to load (transformers.js `model_file_name`); absent: serve the export as it is. */
  modelFileName?: string;
  /** What each rewrite did, for the server log. */
  notes: string[];
  /** The decoding-step graph (./in-place-decode.ts), when there is one: a path to load in a session of its own. */
  decodeStepFile?: string;
}

/** Bump when the fused-attention rewrite changes, so files written by an older version are rebuilt. */
const FUSED_VERSION = 11;
const NOTES_KEY = 'local-inference.notes';

export function derivedBase(rewrites: GraphRewrites): string {
  if (rewrites.fusedAttention) return `${FUSED_ATTENTION_BASE}${rewrites.lastLogits ? '.last-logits' : ''}${rewrites.halfKvCache ? '.kv-float16' : ''}`;
  return rewrites.lastLogits ? LAST_LOGITS_BASE : IN_PLACE_BASE;
}

/** Inline weights below this total stay inline: a second graph file is not worth it for them. */
const IN_PLACE_MIN_BYTES = 1 << 20;

/** Heads, KV heads and head size from config.json, or why they are unknown. */
export function attentionShapeOf(dir: string): AttentionShape | string {
  try {
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    const numHeads = config.num_attention_heads;
    const kvHeads = config.num_key_value_heads ?? numHeads;
    const headDim = config.head_dim ?? (typeof config.hidden_size === 'number' && typeof numHeads === 'number' ? config.hidden_size / numHeads : undefined);
    if (![numHeads, kvHeads, headDim].every((n) => typeof n === 'number' && Number.isInteger(n) && n > 0)) return 'config.json lacks num_attention_heads / num_key_value_heads / head_dim';
    return { numHeads: numHeads as number, kvHeads: kvHeads as number, headDim: headDim as number };
  } catch (error) {
    return `cannot read config.json: ${(error as Error).message}`;
  }
}

/** The notes a derived graph recorded (undefined: none, as in last-logits graphs written before notes were). */
function notesOf(metadata: Map<string, string>): string[] | undefined {
  const value = metadata.get(NOTES_KEY);
  try {
    return value ? (JSON.parse(value) as string[]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Writes (or reuses) the derived graph beside a model's ONNX file. It must sit in the same folder:
 * onnxruntime resolves external data relative to the graph and refuses paths that leave it. No rewrites
 * asked for (embedding models): the graph with its weights in place only.
 */
export function prepareGraph(info: ModelInfo, rewrites: GraphRewrites): PreparedGraph {
  const base = derivedBase(rewrites);
  const source = path.join(info.dir, info.onnxFile);
  const target = path.join(path.dirname(source), `${base}${DTYPE_SUFFIX[info.dtype]}.onnx`);
  // When the export is a symlink (a Hugging Face cache snapshot links every file into blobs/),
  // onnxruntime follows the links and accepts external data only under the graph's folder or the
  // folder the graph really lives in. So the derived graph is then written beside the export's real
  // file (`<blob>.<derived name>`, a name no hash takes) and linked from the snapshot: loaded through
  // the link, its references (model.onnx_data, by their linked names) resolve into that real folder.
  const linked = fs.lstatSync(source).isSymbolicLink();
  const realSource = linked ? fs.realpathSync(source) : source;
  const realFile = (derived: string) => (linked ? `${realSource}.${path.basename(derived).slice('model.'.length)}` : derived);
  const file = realFile(target);
  const stamp = rewrites.fusedAttention ? `${stampOf(source)}:fused-attention-${FUSED_VERSION}` : stampOf(source);
  // The decoding-step graph beside it (written first, so a graph with a matching stamp has its step graph).
  const stepTarget = path.join(path.dirname(target), `${base}.decode-step${DTYPE_SUFFIX[info.dtype]}.onnx`);
  const stepFile = realFile(stepTarget);
  const existing = fs.existsSync(target) ? readMetadata(target) : undefined;
  if (existing?.get(STAMP_KEY) === stamp && (!linked || samePath(target, file))) {
    return {
      modelFileName: base,
      notes: notesOf(existing) ?? (rewrites.lastLogits ? ['logits for the last position only'] : []),
      ...(rewrites.fusedAttention && fs.existsSync(stepTarget) ? { decodeStepFile: stepTarget } : {}),
    };
  }

  const bytes = fs.readFileSync(source);
  const decoded = onnx.ModelProto.decode(bytes);
  const notes: string[] = [];
  let applied = 0;
  let shape: AttentionShape | undefined;
  if (rewrites.fusedAttention) {
    const attention = attentionShapeOf(info.dir);
    const builderForm = isModelBuilderForm(decoded);
    const result = typeof attention === 'string' ? { skipped: attention } : builderForm ? openModelBuilderAttention(decoded, attention) : fuseAttention(decoded, attention);
    if ('layers' in result) {
      applied++;
      shape = attention as AttentionShape;
      notes.push(builderForm ? `model-builder attention of ${result.layers} layers with position ids and left padding (rotary as RotaryEmbedding)` : `attention of ${result.layers} layers as GroupQueryAttention`);
      const graph = decoded.graph as InstanceType<typeof onnx.GraphProto>;
      dropPresentOutputs(graph);
      if (rewrites.halfKvCache) {
        notes.push(halfKvCache(graph) ? 'the KV cache stored as float16 (converted to float32 where each layer reads it)' : 'the KV cache as exported (KV_CACHE_DTYPE=float16 applies to a float32 cache)');
      }
    } else {
      notes.push(`attention as exported (${result.skipped})`);
    }
  }
  if (rewrites.lastLogits) {
    const result = sliceLastPosition(decoded);
    if ('activation' in result) {
      applied++;
      notes.push('logits for the last position only');
    } else {
      notes.push(`logits for every position (${result.skipped})`);
    }
  }
  // Nothing rewritten and no weights to map: the export itself is as good.
  if (applied === 0 && inlineWeightBytes(decoded, bytes) < IN_PLACE_MIN_BYTES) return { notes };
  // The step graph is the served graph with its attention replaced: made from it, then the served
  // graph's own node lists are put back (the weights, shared by both, are referenced in place by then).
  const graph = decoded.graph as InstanceType<typeof onnx.GraphProto>;
  const served = { node: graph.node, output: graph.output, initializer: graph.initializer, valueInfo: graph.valueInfo };
  const step = shape ? decodeStepGraph(decoded, shape) : undefined;
  if (step) notes.push('layers' in step ? `decoding steps at long context through a graph that reads the KV cache in place (${step.layers} layers)` : `decoding steps through GroupQueryAttention (${step.skipped})`);
  decoded.metadataProps = [...decoded.metadataProps.filter((p) => p.key !== NOTES_KEY), { key: NOTES_KEY, value: JSON.stringify(notes) }];
  const stepBytes = step && 'layers' in step ? encodeDerived(decoded, bytes, path.basename(source), stamp) : undefined;
  Object.assign(graph, served);
  // No step graph this time: none from an earlier export may pass for this one's.
  if (!stepBytes) for (const stale of new Set([stepTarget, stepFile])) removeIfPossible(stale);
  const written = (stepBytes ? writeDerived(stepTarget, stepFile, stepBytes, linked) : undefined) ?? writeDerived(target, file, encodeDerived(decoded, bytes, path.basename(source), stamp), linked);
  if (written) return { notes: [`cannot write ${path.relative(info.dir, written.target)}: ${written.code}; the export is served as it is`] };
  return { modelFileName: base, notes, ...(stepBytes ? { decodeStepFile: stepTarget } : {}) };
}

/**
 * Writes a derived graph: at `file`, and when the export is linked, a link to it at `target`. Several
 * workers may prepare the same model at once: each writes its own file, the renames are atomic.
 * Returns what failed, or undefined.
 */
function writeDerived(target: string, file: string, bytes: Uint8Array, linked: boolean): { target: string; code: string } | undefined {
  const suffix = `.${process.pid}-${threadId}.partial`;
  try {
    fs.writeFileSync(`${file}${suffix}`, bytes);
    fs.renameSync(`${file}${suffix}`, file);
    if (linked) {
      fs.symlinkSync(path.relative(path.dirname(target), file), `${target}${suffix}`);
      fs.renameSync(`${target}${suffix}`, target);
    }
    return undefined;
  } catch (error) {
    fs.rmSync(`${file}${suffix}`, { force: true });
    fs.rmSync(`${target}${suffix}`, { force: true });
    return { target, code: String((error as NodeJS.ErrnoException).code ?? error) };
  }
}

/** Removes a file if it is there and may be removed (a read-only folder is left as it is). */
function removeIfPossible(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    // Not ours to remove: the write that follows reports the folder.
  }
}

/** The two paths name the same file (after links). */
function samePath(a: string, b: string): boolean {
  try {
    return fs.realpathSync(a) === fs.realpathSync(b);
  } catch {
    return false;
  }
}

/** Writes (or reuses) the last-position graph beside a chat model's ONNX file (./prepare-graph.ts). */
export function prepareLastLogits(info: ModelInfo): { modelFileName: string } | { skipped: string } {
  const prepared = prepareGraph(info, { lastLogits: true, fusedAttention: false });
  return prepared.modelFileName ? { modelFileName: prepared.modelFileName } : { skipped: prepared.notes.join('; ') };
}

