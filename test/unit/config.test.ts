import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, isLoopback, loadConfig, usage } from '../../src/config.js';

describe('config', () => {
  it('defaults to loopback:8080 with no keys', () => {
    const config = loadConfig([], {});
    expect(config).toMatchObject({ host: '127.0.0.1', port: 8080, apiKeys: [], modelsDir: 'models', workersPerModel: 1 });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('takes flags over environment over file', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cfg-')), 'c.json');
    fs.writeFileSync(file, JSON.stringify({ port: 1111, host: '10.0.0.1', maxQueue: 3 }));
    const config = loadConfig(['--config', file, '--port', '3333'], { PORT: '2222', HOST: '0.0.0.0' });
    expect(config).toMatchObject({ port: 3333, host: '0.0.0.0', maxQueue: 3 });
  });

  it('reads keys and aliases from env and flags', () => {
    expect(loadConfig([], { API_KEYS: 'a, b', MODEL_ALIASES: 'claude-x=tiny' })).toMatchObject({ apiKeys: ['a', 'b'], modelAliases: { 'claude-x': 'tiny' } });
    expect(loadConfig(['--api-key', 'k1', '--api-key', 'k2', '--alias', 'x=y'], {})).toMatchObject({ apiKeys: ['k1', 'k2'], modelAliases: { x: 'y' } });
  });

  it('rejects bad values with the field named', () => {
    expect(() => loadConfig(['--port', '99999'], {})).toThrow(ConfigError);
    expect(() => loadConfig([], { WORKERS_PER_MODEL: 'many' })).toThrow(/workersPerModel/);
    expect(() => loadConfig(['--bogus'], {})).toThrow();
  });

  it('knows loopback hosts', () => {
    expect(['127.0.0.1', 'localhost', '::1', '127.1.2.3'].every(isLoopback)).toBe(true);
    expect(['0.0.0.0', '192.168.1.2', '::'].some(isLoopback)).toBe(false);
  });
});

describe('--help, from the schema', () => {
  const text = usage();
  it('prints every flag with its default and a line of meaning', () => {
    for (const [flag, fallback] of [['--port N', '8080'], ['--prompt-cache-bytes BYTES', String(1024 ** 3)], ['--keep-alive 5m|30s|0|-1', '5m'], ['--kv-cache-dtype auto|float16|q8_0|q4_0', 'auto']] as const) {
      const at = text.indexOf(`  ${flag}\n`);
      expect(at, flag).toBeGreaterThan(0);
      const meaning = text.slice(at).split('\n')[1]!;
      expect(meaning).toContain(`[default: ${fallback}]`);
      expect(meaning.replace(/\[default.*$/, '').trim().length).toBeGreaterThan(10);
    }
    // Every field of the schema is there, with its environment variable.
    for (const env of ['MODELS_DIR', 'PREFILL_CHUNK_TOKENS', 'MODELS_RESCAN_MS', 'EMBED_TRUNCATE']) expect(text).toContain(`(${env})`);
  });

  it('takes a negative value after a flag (`--keep-alive -1`), which node:util parseArgs refuses alone', () => {
    expect(loadConfig(['--keep-alive', '-1'], {}).keepAlive).toBe(-1);
    expect(loadConfig(['--keep-alive=-1'], {}).keepAlive).toBe(-1);
    expect(loadConfig(['--model-keep-alive', 'a=-1'], {}).modelKeepAlive).toEqual({ a: -1 });
  });
});
