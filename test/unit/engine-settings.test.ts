import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { engineSettingsOf, engineSettingsSchema, ENGINE_DEFAULTS } from '../../src/core/engine-settings.js';
import { TEST_ENGINE, TEST_ENGINE_OVERRIDES } from '../helpers/engine.js';

describe('engine settings', () => {
  it('the server ships the schema defaults: what main passes down with no flags is ENGINE_DEFAULTS, and the prompt cache folder under the user cache', () => {
    const { promptCacheDir, ...rest } = engineSettingsOf(loadConfig([], { XDG_CACHE_HOME: '/tmp/cache-home' }));
    expect(rest).toEqual(ENGINE_DEFAULTS);
    // The one default the configuration resolves (from the environment, as hfHubCache): the tests leave it unset and write nothing.
    expect(ENGINE_DEFAULTS.promptCacheDir).toBeUndefined();
    expect(promptCacheDir).toBe('/tmp/cache-home/local-inference-server/prompt-cache');
  });

  it('the tests run the shipped settings, except the overrides they name', () => {
    const differing = Object.keys(ENGINE_DEFAULTS).filter((k) => TEST_ENGINE[k as keyof typeof TEST_ENGINE] !== ENGINE_DEFAULTS[k as keyof typeof ENGINE_DEFAULTS]);
    expect(differing).toEqual(Object.keys(TEST_ENGINE_OVERRIDES));
    // The two defaults the copies used to disagree on (issue 27): one value, the config's.
    expect(TEST_ENGINE.promptCacheBytes).toBe(1024 * 1024 * 1024);
    expect(TEST_ENGINE.inPlaceDecodeMinContext).toBe(512);
  });

  it('every engine field is a config field, set by its flag and its environment variable', () => {
    const fields = Object.keys(engineSettingsSchema.shape);
    const config = loadConfig(['--prefill-chunk-tokens', '64', '--ort-graph-optimization-level', 'basic'], { PROMPT_CACHE_BYTES: '0', KV_CACHE_DTYPE: 'float16' });
    expect(engineSettingsOf(config)).toMatchObject({ prefillChunkTokens: 64, promptCacheBytes: 0, kvCacheDtype: 'float16', ortGraphOptimizationLevel: 'basic' });
    expect(() => loadConfig(['--ort-graph-optimization-level', 'most'], {})).toThrow(/ortGraphOptimizationLevel/);
    expect(Object.keys(engineSettingsOf(config)).sort()).toEqual([...fields].sort());
  });
});
