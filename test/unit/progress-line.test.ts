/**
 * The `models pull` progress line: a bar with the rate on a terminal, plain lines in a log.
 */
import { describe, expect, it } from 'vitest';
import { progressLine } from '../../src/cli/models.js';

describe('progressLine', () => {
  it('draws a bar in proportion, the percentage, the sizes and the rate on a terminal', () => {
    expect(progressLine({ file: 'onnx/model.onnx', received: 1_500_000, total: 6_000_000, bytesPerSecond: 2_000_000, bar: true }))
      .toBe('  onnx/model.onnx  [######..................]  25%  1.5 MB / 6.0 MB  2.0 MB/s');
    expect(progressLine({ file: 'a', received: 6_000_000, total: 6_000_000, bar: true })).toBe('  a  [########################] 100%  6.0 MB / 6.0 MB');
  });

  it('writes plain lines for a log, and leaves out what it does not know', () => {
    expect(progressLine({ file: 'config.json', received: 512, total: 1024, bar: false })).toBe('  config.json  512 B / 1.0 kB  50%');
    expect(progressLine({ file: 'x', received: 512, total: null, bar: true })).toBe('  x  [........................] 512 B');
  });
});
