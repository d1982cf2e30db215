/**
 * llama.cpp's parse cases (every `tests/test-chat.cpp` case, as data: test/helpers/chat-cases.ts)
 * replayed through our parser, per model family. A family in SERVED must pass every case our
 * chat layer has a counterpart of; every family must keep at least the cases it passes now
 * (FLOOR). Raise both as parsers land. The tally (passed / replayed / in the file) is printed
 * for all of them.
 */
import { describe, expect, it } from 'vitest';
import { casesByFamily, chatCases, mismatch, replay, type ChatCase, type Replay } from '../helpers/chat-cases.js';

/** Families whose every supported case must pass, with what serves them. */
const SERVED: Record<string, string> = {
  'Hermes 2 / 3': 'hermes format (src/chat/tools/parser.ts)',
  'Seed-OSS': 'the template analysis (src/chat/template/analyze.ts): <seed:think>, <seed:tool_call> tagged calls',
  Granite: 'hermes format (4.0, 4.1); think tags (3.3)',
  Apriel: 'the template analysis: <tool_calls>[…] JSON calls; 1.6 its thought, begun by its prompt, ended by [BEGIN FINAL RESPONSE]',
};

/**
 * Cases each family passes (2026-11-28, with issue 38's family formats and the template analysis:
 * 277 of 427; before the analysis 246, before the family formats 88): fewer is a regression.
 * A family absent here has no floor (0).
 */
const FLOOR: Record<string, number> = {
  'gpt-oss': 12,
  'Mistral / Devstral / Ministral / Magistral': 14,
  'Kimi K2': 13,
  'DeepSeek R1 / V3.1 / V3.2 / V4': 28,
  'GLM 4.5 / 4.6 / 4.7': 7,
  'MiniMax M2': 4,
  'Qwen3 / Qwen3-Coder / Qwen3.5': 39,
  'Hermes 2 / 3': 4,
  'Llama 3.x': 4,
  'Gemma 4': 22,
  LFM2: 48,
  Granite: 6,
  'Command-R': 16,
  'Seed-OSS': 6,
  Apriel: 4,
  Nemotron: 7,
  'Qwen2.5 / QwQ': 4,
  'MiMo-VL': 2,
  'Gemma 2': 3,
  'FireFunction v2': 1,
  Functionary: 1,
  StepFun: 11,
  GigaChat: 6,
  MiniCPM: 1,
  Reka: 14,
};

const file = chatCases();
const byFamily = casesByFamily();
const results = new Map<string, { c: ChatCase; r: Replay }[]>([...byFamily].map(([family, cases]) => [family, cases.map((c) => ({ c, r: replay(c) }))]));

describe('llama.cpp parse cases (tests/test-chat.cpp) through our parser', () => {
  it('the fixture accounts for every case of the file: each extracted, or listed with its reason', () => {
    for (const f of file.families) {
      const listed = file.unextracted.filter((u) => u.family === f.family);
      expect(f.extracted, f.family).toBe(byFamily.get(f.family)!.length);
      expect(f.inFile, f.family).toBe(f.extracted + listed.length);
    }
    for (const u of file.unextracted) expect(u.reason).not.toBe('');
    // Every case names a family of the table and a template the harness can read.
    for (const c of file.cases) expect(byFamily.has(c.family), c.id).toBe(true);
  });

  it('the comparison is strict: a changed expectation fails the case', () => {
    const passing = [...results.values()].flat().filter(({ r }) => r.passed);
    expect(passing.length).toBeGreaterThan(0);
    for (const { c } of passing) {
      const parsed = { content: c.expect.content, reasoningContent: c.expect.reasoningContent, toolCalls: c.expect.toolCalls.map((t) => ({ name: t.name, input: JSON.parse(t.arguments) as Record<string, unknown> })) };
      expect(mismatch(c, parsed), c.id).toBeNull();
      expect(mismatch(c, { ...parsed, content: `${parsed.content}x` }), c.id).not.toBeNull();
      expect(mismatch(c, { ...parsed, reasoningContent: `${parsed.reasoningContent}x` }), c.id).not.toBeNull();
      expect(mismatch(c, { ...parsed, toolCalls: [...parsed.toolCalls, { name: 'x', input: {} }] }), c.id).not.toBeNull();
      for (const [i, call] of parsed.toolCalls.entries()) {
        const calls = (change: object) => parsed.toolCalls.map((t, j) => (j === i ? { ...t, ...change } : t));
        expect(mismatch(c, { ...parsed, toolCalls: calls({ name: `${call.name}x` }) }), c.id).not.toBeNull();
        expect(mismatch(c, { ...parsed, toolCalls: calls({ input: { ...call.input, extra: 1 } }) }), c.id).not.toBeNull();
      }
    }
  });

  for (const [family, why] of Object.entries(SERVED)) {
    it(`${family} (${why}): every case passes`, () => {
      const rows = results.get(family);
      expect(rows, `${family} is not a family of the fixture`).toBeDefined();
      const failed = rows!.filter(({ r }) => !r.passed && !r.unsupported).map(({ c, r }) => `${c.id} (test-chat.cpp:${c.line}): ${r.reason}`);
      expect(failed).toEqual([]);
    });
  }

  it('no family passes fewer cases than it did (FLOOR); the tally for all of them', () => {
    const rows = file.families.map((f) => {
      const rs = results.get(f.family)!;
      return {
        family: f.family,
        passed: rs.filter(({ r }) => r.passed).length,
        replayed: rs.length,
        inFile: f.inFile,
        unsupported: rs.filter(({ r }) => r.unsupported).length,
        served: f.family in SERVED ? 'yes' : '',
      };
    });
    console.table(rows);
    const total = rows.reduce((a, r) => ({ passed: a.passed + r.passed, replayed: a.replayed + r.replayed, inFile: a.inFile + r.inFile }), { passed: 0, replayed: 0, inFile: 0 });
    console.log(`all families: ${total.passed} passed / ${total.replayed} replayed / ${total.inFile} in the file`);
    for (const family of Object.keys(FLOOR)) expect(byFamily.has(family), `FLOOR names ${family}, not a family of the fixture`).toBe(true);
    const below = rows.filter((r) => r.passed < (FLOOR[r.family] ?? 0)).map((r) => {
      const failing = results.get(r.family)!.filter(({ r: x }) => !x.passed).map(({ c, r: x }) => `  ${c.id}: ${x.reason}`);
      return `${r.family}: ${r.passed} < ${FLOOR[r.family]}\n${failing.join('\n')}`;
    });
    expect(below).toEqual([]);
  });
});
