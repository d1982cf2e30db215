/** The dialects' reasoning effort words as the core's thinking options (src/http/shared/effort.ts). */
import { describe, expect, it } from 'vitest';
import { thinkingFromEffort, thinkingLevel } from '../../src/http/shared/effort.js';

describe('reasoning effort', () => {
  it('maps every word of the three dialects to the nearest of low / medium / high', () => {
    expect(['minimal', 'low', 'medium', 'high', 'xhigh', 'max'].map(thinkingLevel)).toEqual(['low', 'low', 'medium', 'high', 'high', 'high']);
    expect([undefined, null, 'none', 'unknown'].map(thinkingLevel)).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('none and minimal turn thinking off (minimal keeps its level for templates that cannot turn it off); absent says nothing', () => {
    expect(thinkingFromEffort(undefined)).toBeUndefined();
    expect(thinkingFromEffort('none')).toEqual({ enabled: false });
    expect(thinkingFromEffort('minimal')).toEqual({ enabled: false, level: 'low' });
    expect(thinkingFromEffort('medium')).toEqual({ enabled: true, level: 'medium' });
  });
});
