/**
 * A GGUF chat model's context and sequences within its KV budget (issue 40): the context served
 * (src/models/gguf-kv.ts) and the layout of the sequences in rooms (src/engines/llama/layout.ts).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { layoutText, MIN_SHORT_TOKENS, planLayout } from '../../src/engines/llama/layout.js';
import type { GgufMetadata } from '../../src/models/gguf.js';
import { autoKvBudgetBytes, kvBytesPerToken, servedContext } from '../../src/models/gguf-kv.js';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

/** Qwen3-8B's shape: 36 layers, 8 KV heads of 128: 144 KiB of float16 KV a token. */
const qwen3_8b: GgufMetadata = new Map<string, number | string>([
  ['general.architecture', 'qwen3'], ['qwen3.block_count', 36], ['qwen3.attention.head_count', 32], ['qwen3.attention.head_count_kv', 8],
  ['qwen3.embedding_length', 4096], ['qwen3.attention.key_length', 128], ['qwen3.attention.value_length', 128], ['qwen3.context_length', 40_960],
]);

describe('the KV a GGUF token takes', () => {
  it('counts every layer\'s keys and values per KV head at the cache type', () => {
    expect(kvBytesPerToken(qwen3_8b, 'auto')).toBe(36 * 8 * 256 * 2);
    expect(kvBytesPerToken(qwen3_8b, 'q8_0')).toBe(36 * 8 * 256 * 34 / 32);
  });

  it('counts no KV on the recurrent layers of a hybrid model (0 KV heads in its per-layer array)', () => {
    const hybrid: GgufMetadata = new Map<string, number | string | number[]>([
      ['general.architecture', 'lfm2'], ['lfm2.block_count', 4], ['lfm2.attention.head_count', 8], ['lfm2.attention.head_count_kv', [0, 2, 0, 2]], ['lfm2.embedding_length', 512],
    ]);
    expect(kvBytesPerToken(hybrid, 'auto')).toBe(2 * 2 * (64 + 64) * 2);
  });
});

describe('the context served', () => {
  it('is the trained context, with no manifest, when one sequence of it fits the budget', () => {
    expect(servedContext({ metadata: qwen3_8b, settings: { kvBudgetBytes: 6 * GiB, kvCacheDtype: 'auto' }, manifest: {} }).contextLength).toBe(40_960);
  });

  it('is cut to what one sequence can hold when the budget is smaller; the manifest\'s budget wins over the setting', () => {
    const cut = servedContext({ metadata: qwen3_8b, settings: { kvBudgetBytes: 2 * GiB, kvCacheDtype: 'auto' }, manifest: {} });
    expect(cut.contextLength).toBe(14_336); // 2 GiB / 144 KiB = 14,563, in steps of 256
    expect(servedContext({ metadata: qwen3_8b, settings: { kvBudgetBytes: 2 * GiB, kvCacheDtype: 'q8_0' }, manifest: {} }).contextLength).toBe(27_392);
    expect(servedContext({ metadata: qwen3_8b, settings: { kvBudgetBytes: 2 * GiB, kvCacheDtype: 'auto' }, manifest: { kvBudgetBytes: 8 * GiB } })).toMatchObject({ contextLength: 40_960, budgetBytes: 8 * GiB });
  });

  it('auto is a quarter of the machine\'s memory; the setting takes a number of bytes too', () => {
    expect(servedContext({ metadata: qwen3_8b, settings: { kvBudgetBytes: 'auto', kvCacheDtype: 'auto' }, manifest: {} }).budgetBytes).toBe(autoKvBudgetBytes());
    expect(loadConfig([], {}).kvBudgetBytes).toBe('auto');
    expect(loadConfig(['--kv-budget-bytes', String(GiB)], {}).kvBudgetBytes).toBe(GiB);
    expect(loadConfig([], { KV_BUDGET_BYTES: '1000' }).kvBudgetBytes).toBe(1000);
    expect(() => loadConfig(['--kv-budget-bytes', 'lots'], {})).toThrow(/kvBudgetBytes/);
  });
});

describe('the layout of the sequences', () => {
  const perToken = 144 * 1024;
  const overhead = 297 * MiB;
  const plan = (budgetBytes: number, contextLength = 32_768, sequences = 8) => planLayout({ contextLength, sequences, bytesPerToken: perToken, budgetBytes, contextOverheadBytes: overhead });

  it('gives every sequence the whole context when they all fit: one context', () => {
    const layout = plan(8 * 32_768 * perToken);
    expect(layoutText(layout)).toBe('8 x 32768');
    expect(layout.kvBytes).toBe(8 * 32_768 * perToken);
  });

  it('else a long room of what fits whole, and a short room of the other sequences in what is left after its compute buffer', () => {
    const layout = plan(6 * GiB);
    // 6 GiB - 4.5 GiB (one whole sequence) - 297 MiB = 1,239 MiB: 7 x 1,259 tokens is too short,
    // so as many sequences of at least 4,096 tokens as fit: 2 of 4,352.
    expect(layoutText(layout)).toBe('1 x 32768 + 2 x 4352');
    expect(layout.kvBytes).toBeLessThanOrEqual(6 * GiB - overhead);
    const roomy = plan(20 * GiB);
    // 20 GiB: 4 whole (18 GiB), then 1,751 MiB: 12,452 tokens, 3 sequences of at least 4,096.
    expect(layoutText(roomy)).toBe('4 x 32768 + 3 x 4096');
    expect(roomy.kvBytes).toBeLessThanOrEqual(20 * GiB - overhead);
  });

  it('has no short room when what is left holds no sequence of the shortest size, and never fewer than one whole sequence', () => {
    expect(layoutText(plan(32_768 * perToken + overhead + (MIN_SHORT_TOKENS - 256) * perToken))).toBe('1 x 32768');
    expect(layoutText(plan(32_768 * perToken))).toBe('1 x 32768');
  });

  it('gives fewer whole sequences, no short room, when the context itself is short', () => {
    expect(layoutText(plan(3 * 4096 * perToken, 4096))).toBe('3 x 4096');
  });
});
