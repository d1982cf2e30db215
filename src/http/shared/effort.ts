/**
 * The dialects' reasoning effort as the core's thinking level. OpenAI's `reasoning_effort` and
 * Responses' `reasoning.effort` (none, minimal, low, medium, high, xhigh) and Anthropic's
 * `output_config.effort` (low, medium, high, max) all name how hard to think; templates that take a
 * level (gpt-oss: `Reasoning: low|medium|high`) get the nearest of three, and none or minimal turn
 * thinking off where the template has only a switch.
 */
import type { ThinkingLevel, ThinkingOptions } from '../../core/types.js';

const LEVELS: Record<string, ThinkingLevel> = { minimal: 'low', low: 'low', medium: 'medium', high: 'high', xhigh: 'high', max: 'high' };

/** The level an effort names; undefined for none, absent or unknown words. */
export function thinkingLevel(effort: string | null | undefined): ThinkingLevel | undefined {
  return effort == null ? undefined : LEVELS[effort];
}

/** OpenAI's effort as thinking options: absent, none (off), minimal (off, the lowest level), or on at a level. */
export function thinkingFromEffort(effort: string | null | undefined): ThinkingOptions | undefined {
  if (effort == null) return undefined;
  const level = thinkingLevel(effort);
  const enabled = effort !== 'none' && effort !== 'minimal';
  return { enabled, ...(level ? { level } : {}) };
}
