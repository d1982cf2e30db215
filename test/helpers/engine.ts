/**
 * The engine settings the tests run with: the ones the server ships with (ENGINE_DEFAULTS, every
 * field at its config default), except onnxruntime's threads: one per session, since a test file
 * may run several workers on a 2-core machine. test/unit/engine-settings.test.ts holds the two
 * against each other, so a default changed in the schema reaches the tests at once.
 */
import { ENGINE_DEFAULTS, type EngineSettings } from '../../src/core/engine-settings.js';

/** What the tests change from the shipped settings, and nothing else. */
export const TEST_ENGINE_OVERRIDES = { intraOpThreads: 1 } as const satisfies Partial<EngineSettings>;

export const TEST_ENGINE: EngineSettings = Object.freeze({ ...ENGINE_DEFAULTS, ...TEST_ENGINE_OVERRIDES });

/** The test settings with a test's own choices on top (a test of one setting names it here). */
export const testEngine = (overrides: Partial<EngineSettings> = {}): EngineSettings => Object.freeze({ ...TEST_ENGINE, ...overrides });
