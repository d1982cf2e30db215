/**
 * `models pull owner/name:QUANT` from a GGUF repository (a local stand-in hub serving two
 * quantizations, one split in two parts in a folder, and a projector): only that quantization's
 * files are fetched, resumed after an interruption and checked against the hub's sha256; they land
 * in models/<name>/ beside the quantizations already there, or in the Hugging Face cache, where the
 * scanner serves them. `rm`, `pack`/`unpack` and `list` treat a GGUF model as its own files.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tar from 'tar';
import { pull } from '../../src/models/hub/pull.js';
import { pack, unpack } from '../../src/models/hub/pack.js';
import { removeModel } from '../../src/models/hub/local-models.js';
import { scanModels } from '../../src/models/registry.js';
import { repoFolderName, scanHuggingFaceCache } from '../../src/models/hf-cache.js';
import { GGUF_REPO_FILES, startHubServer, writeGgufRepo, type HubServer } from '../helpers/hub-server.js';
import { ROOT } from '../helpers/paths.js';

const REPO = 'test-org/tiny-GGUF';
const NAME = 'tiny-GGUF';
let root: string;
let source: string;
let hub: HubServer;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-gguf-'));
  source = path.join(root, 'published');
  writeGgufRepo(source);
  hub = await startHubServer(REPO, source);
});
afterAll(async () => {
  await hub?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const modelsDir = (name: string) => {
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
};
const sameBytes = (a: string, b: string) => fs.readFileSync(a).equals(fs.readFileSync(b));
/** Every file below `dir`, dot folders included, relative. */
const allFiles = (dir: string): string[] => (fs.readdirSync(dir, { recursive: true }) as string[]).filter((rel) => fs.statSync(path.join(dir, rel)).isFile()).sort();
const served = (dir: string) => scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models.map((m) => ({ id: m.id, aliases: m.aliases, quant: m.gguf?.quant, parts: m.gguf?.parts.map((p) => path.basename(p)) }));
const fetchedFiles = () => hub.requests.filter((r) => r.url.includes('/resolve/')).map((r) => decodeURIComponent(r.url.replace(/^.*\/resolve\/[^/]+\//, '')));

describe('models pull owner/name:QUANT (a GGUF repository)', () => {
  it('fetches that quantization only; a second one joins it in the folder and each is served as <name>:<QUANT>', async () => {
    const dir = modelsDir('pulled');
    const lines: string[] = [];
    hub.requests.length = 0;
    const first = await pull({ repo: `${REPO}:Q4_K_M`, revision: 'main', endpoint: hub.url, modelsDir: dir, log: (line) => lines.push(line) });
    expect(first).toMatchObject({ id: NAME, aliases: [`${NAME}:Q4_K_M`], dir: path.join(dir, NAME), commit: hub.commit });
    expect(Object.keys(first.files)).toEqual(GGUF_REPO_FILES.Q4_K_M);
    expect(fetchedFiles()).toEqual(GGUF_REPO_FILES.Q4_K_M);
    expect(fs.readdirSync(dir)).toEqual([NAME]); // no staging left behind
    expect(fs.readdirSync(path.join(dir, NAME))).toEqual(['tiny-Q4_K_M.gguf']); // no manifest: the file describes itself
    expect(sameBytes(path.join(dir, NAME, 'tiny-Q4_K_M.gguf'), path.join(source, 'tiny-Q4_K_M.gguf'))).toBe(true);
    expect(served(dir)).toEqual([{ id: NAME, aliases: [`${NAME}:Q4_K_M`], quant: 'Q4_K_M', parts: ['tiny-Q4_K_M.gguf'] }]);
    expect(lines.at(-1)).toBe(`done: ${path.join(dir, NAME)} serves ${NAME}, ${NAME}:Q4_K_M`);

    // --quant, in any case; the split parts come out of their folder into the model's.
    const second = await pull({ repo: REPO, quant: 'q8_0', revision: 'main', endpoint: hub.url, modelsDir: dir, log: (line) => lines.push(line) });
    expect(second).toMatchObject({ id: `${NAME}:Q8_0`, aliases: [] });
    expect(Object.keys(second.files)).toEqual(GGUF_REPO_FILES.Q8_0);
    expect(fs.readdirSync(path.join(dir, NAME)).sort()).toEqual(['tiny-Q4_K_M.gguf', 'tiny-Q8_0-00001-of-00002.gguf', 'tiny-Q8_0-00002-of-00002.gguf']);
    expect(served(dir)).toEqual([
      { id: `${NAME}:Q4_K_M`, aliases: [], quant: 'Q4_K_M', parts: ['tiny-Q4_K_M.gguf'] },
      { id: `${NAME}:Q8_0`, aliases: [], quant: 'Q8_0', parts: ['tiny-Q8_0-00001-of-00002.gguf', 'tiny-Q8_0-00002-of-00002.gguf'] },
    ]);
    expect(lines.at(-1)).toBe(`done: ${path.join(dir, NAME)} serves ${NAME}:Q8_0; beside it: ${NAME}:Q4_K_M`);
    await expect(pull({ repo: `${REPO}:Q8_0`, revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/tiny-Q8_0-00001-of-00002\.gguf already exists; remove it first/);
  });

  it('resumes an interrupted part with a Range request; a half-pulled model is never served', async () => {
    const dir = modelsDir('resumed');
    const [part1, part2] = GGUF_REPO_FILES.Q8_0;
    hub.cutAfter.set(part2, 6_000);
    await expect(pull({ repo: `${REPO}:Q8_0`, revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/tiny-Q8_0-00002-of-00002\.gguf: .*(interrupted|got \d+ of \d+ bytes)/);
    expect(scanModels({ modelsDir: dir, defaultPoolSize: 1 })).toEqual({ models: [], skipped: [] });
    const partial = fs.statSync(path.join(dir, `.pull-${NAME}`, `${part2}.part`)).size;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThanOrEqual(6_000);

    hub.requests.length = 0;
    await pull({ repo: `${REPO}:Q8_0`, revision: 'main', endpoint: hub.url, modelsDir: dir });
    const size = fs.statSync(path.join(source, part2)).size;
    expect(fetchedFiles()).toEqual([part2]); // the finished first part is not fetched again
    expect(hub.requests.filter((r) => r.url.includes('00002-of')).map((r) => r.range)).toContain(`bytes=${partial}-${size - 1}`);
    expect(hub.requests.filter((r) => r.url.includes('00002-of')).map((r) => r.range)).not.toContain(undefined);
    expect(sameBytes(path.join(dir, NAME, path.basename(part2)), path.join(source, part2))).toBe(true);
    expect(sameBytes(path.join(dir, NAME, path.basename(part1)), path.join(source, part1))).toBe(true);
    expect(served(dir).map((m) => m.id)).toEqual([NAME]);
    expect(fs.readdirSync(dir)).toEqual([NAME]);
  });

  it('refuses a file whose sha256 is not the one the hub lists, and leaves no file', async () => {
    const dir = modelsDir('corrupt');
    hub.corrupt.add('tiny-Q4_K_M.gguf');
    try {
      await expect(pull({ repo: `${REPO}:Q4_K_M`, revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/tiny-Q4_K_M\.gguf: checksum mismatch \(sha256 [0-9a-f]{64}, the hub lists [0-9a-f]{64}\); the partial file was removed/);
    } finally {
      hub.corrupt.clear();
    }
    expect(allFiles(dir)).toEqual([]);
    expect(scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models).toEqual([]);
  });

  it('names the quantizations a repository has when the one asked for is not there, or none is named', async () => {
    const dir = modelsDir('missing');
    await expect(pull({ repo: `${REPO}:Q5_K_M`, revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(`${REPO}@main has no Q5_K_M GGUF file; its quantizations: Q4_K_M, Q8_0`);
    // The projector is no model: its F16 is not one of them.
    await expect(pull({ repo: `${REPO}:F16`, revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/has no F16 GGUF file; its quantizations: Q4_K_M, Q8_0$/);
    await expect(pull({ repo: REPO, revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(`${REPO}@main holds 2 GGUF models; name one, as ${REPO}:<QUANT> or with --quant (its quantizations: Q4_K_M, Q8_0)`);
    await expect(pull({ repo: REPO, dtype: 'q8', revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/is a GGUF repository; --dtype is for ONNX exports/);
    await expect(pull({ repo: `${REPO}:Q4_K_M`, quant: 'Q8_0', revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/names quantization Q4_K_M and --quant Q8_0/);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('--hf-cache: blobs, snapshot links and refs/main in the cache layout, served as org/name, then org/name:<QUANT> each', async () => {
    const cache = modelsDir('hf-cache');
    const repoDir = path.join(cache, repoFolderName(REPO));
    const snapshot = path.join(repoDir, 'snapshots', hub.commit);
    // Ollama's spelling, with the hub's host in front.
    const first = await pull({ repo: `hf.co/${REPO}:Q4_K_M`, revision: 'main', endpoint: hub.url, modelsDir: root, hfCacheDir: cache });
    expect(first).toMatchObject({ id: REPO, aliases: [`${REPO}:Q4_K_M`], dir: snapshot });
    expect(fs.readFileSync(path.join(repoDir, 'refs', 'main'), 'utf8')).toBe(hub.commit);
    expect(fs.lstatSync(path.join(snapshot, 'tiny-Q4_K_M.gguf')).isSymbolicLink()).toBe(true);
    expect(path.dirname(fs.realpathSync(path.join(snapshot, 'tiny-Q4_K_M.gguf')))).toBe(fs.realpathSync(path.join(repoDir, 'blobs')));
    expect(scanHuggingFaceCache({ cacheDir: cache, defaultPoolSize: 1 }).models.map((m) => [m.id, m.aliases])).toEqual([[REPO, [`${REPO}:Q4_K_M`]]]);

    const second = await pull({ repo: `${REPO}:Q8_0`, revision: 'main', endpoint: hub.url, modelsDir: root, hfCacheDir: cache });
    expect(second).toMatchObject({ id: `${REPO}:Q8_0`, aliases: [] });
    for (const rel of GGUF_REPO_FILES.Q8_0) expect(sameBytes(path.join(snapshot, rel), path.join(source, rel)), rel).toBe(true);
    const { models, skipped } = scanHuggingFaceCache({ cacheDir: cache, defaultPoolSize: 1 });
    expect(skipped).toEqual([]);
    expect(models.map((m) => m.id).sort()).toEqual([`${REPO}:Q4_K_M`, `${REPO}:Q8_0`]);
    expect(fs.readdirSync(path.join(repoDir, 'blobs')).filter((f) => f.endsWith('.incomplete'))).toEqual([]);
  });
});

describe('rm, pack and unpack of GGUF models', () => {
  it('rm deletes only that model\'s files, the folder once nothing else is in it, never the models folder', async () => {
    const dir = modelsDir('rm');
    for (const quant of ['Q4_K_M', 'Q8_0']) await pull({ repo: `${REPO}:${quant}`, revision: 'main', endpoint: hub.url, modelsDir: dir });
    fs.copyFileSync(path.join(source, 'tiny-Q4_K_M.gguf'), path.join(dir, 'loose-Q4_K_M.gguf'));
    expect(served(dir).map((m) => m.id)).toEqual([`${NAME}:Q4_K_M`, `${NAME}:Q8_0`, 'loose-Q4_K_M']);

    expect(removeModel(dir, `${NAME}:Q8_0`)).toEqual(GGUF_REPO_FILES.Q8_0.map((rel) => path.join(dir, NAME, path.basename(rel))));
    expect(served(dir).map((m) => m.id)).toEqual([NAME, 'loose-Q4_K_M']);
    expect(removeModel(dir, `${NAME}:Q4_K_M`)).toEqual([path.join(dir, NAME, 'tiny-Q4_K_M.gguf'), path.join(dir, NAME)]); // by its alias
    expect(removeModel(dir, 'loose-Q4_K_M')).toEqual([path.join(dir, 'loose-Q4_K_M.gguf')]);
    expect(fs.existsSync(dir)).toBe(true);
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(removeModel(dir, 'absent')).toBeUndefined();
  });

  it('pack carries one quantization of a folder, a whole folder, or a loose file; unpacked, the scanner serves each', async () => {
    const from = modelsDir('pack-from');
    for (const quant of ['Q4_K_M', 'Q8_0']) await pull({ repo: `${REPO}:${quant}`, revision: 'main', endpoint: hub.url, modelsDir: from });
    fs.writeFileSync(path.join(from, NAME, 'manifest.json'), JSON.stringify({ displayName: 'Tiny' }));
    fs.copyFileSync(path.join(source, 'tiny-Q4_K_M.gguf'), path.join(from, 'loose.gguf'));

    const one = path.join(root, 'one-quant.tar');
    await pack({ modelsDir: from, ids: [`${NAME}:Q8_0`, 'loose'], output: one });
    const packed: string[] = [];
    await tar.t({ file: one, onReadEntry: (entry) => void packed.push(entry.path) });
    expect(packed.sort()).toEqual(['CHECKSUMS.json', 'loose/loose.gguf', `${NAME}/manifest.json`, `${NAME}/tiny-Q8_0-00001-of-00002.gguf`, `${NAME}/tiny-Q8_0-00002-of-00002.gguf`]);
    const to = modelsDir('pack-one');
    expect((await unpack({ modelsDir: to, archive: one })).sort()).toEqual(['loose', NAME]);
    expect(scanModels({ modelsDir: to, defaultPoolSize: 1 })).toMatchObject({ skipped: [], models: [{ id: 'loose' }, { id: NAME, aliases: [`${NAME}:Q8_0`], displayName: 'Tiny' }] });

    const whole = path.join(root, 'whole.tar');
    await pack({ modelsDir: from, ids: [NAME], output: whole });
    const again = modelsDir('pack-whole');
    expect(await unpack({ modelsDir: again, archive: whole })).toEqual([NAME]);
    expect(served(again).map((m) => m.id)).toEqual([`${NAME}:Q4_K_M`, `${NAME}:Q8_0`]);
  });

  it('unpack of one quantization over a folder holding another joins it; a quantization already there, or a shared file that differs, is refused', async () => {
    const from = modelsDir('join-from');
    await pull({ repo: `${REPO}:Q8_0`, revision: 'main', endpoint: hub.url, modelsDir: from });
    fs.writeFileSync(path.join(from, NAME, 'manifest.json'), JSON.stringify({ displayName: 'Tiny' }));
    const archive = path.join(root, 'join.tar');
    await pack({ modelsDir: from, ids: [`${NAME}:Q8_0`], output: archive });

    const to = modelsDir('join-to');
    await pull({ repo: `${REPO}:Q4_K_M`, revision: 'main', endpoint: hub.url, modelsDir: to });
    fs.writeFileSync(path.join(to, NAME, 'manifest.json'), JSON.stringify({ displayName: 'Tiny' }));
    const lines: string[] = [];
    expect(await unpack({ modelsDir: to, archive, log: (line) => lines.push(line) })).toEqual([NAME]);
    expect(lines).toContain(`unpacked ${NAME}: tiny-Q8_0-00001-of-00002.gguf, tiny-Q8_0-00002-of-00002.gguf joined the quantizations there`);
    expect(served(to).map((m) => m.id)).toEqual([`${NAME}:Q4_K_M`, `${NAME}:Q8_0`]);
    await expect(unpack({ modelsDir: to, archive })).rejects.toThrow(`${path.join(to, NAME)} already exists (it holds tiny-Q8_0-00001-of-00002.gguf, tiny-Q8_0-00002-of-00002.gguf already); remove it first or unpack with --force`);

    const other = modelsDir('join-differs');
    await pull({ repo: `${REPO}:Q4_K_M`, revision: 'main', endpoint: hub.url, modelsDir: other });
    fs.writeFileSync(path.join(other, NAME, 'manifest.json'), JSON.stringify({ displayName: 'Other' }));
    await expect(unpack({ modelsDir: other, archive })).rejects.toThrow(`${path.join(other, NAME)} already exists (its manifest.json differs from the archive's); remove it first or unpack with --force`);
    expect(served(other).map((m) => m.id)).toEqual([NAME]); // untouched
  });
});

describe('the models command with a GGUF repository (npm bin)', () => {
  // Asynchronous: the stand-in hub runs in this process and must keep answering.
  const cli = (args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [path.join(ROOT, 'bin/models.js'), ...args], (error, stdout, stderr) =>
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });

  it('pull, list (the quantization under DTYPE, sizes of its own files) and rm', async () => {
    const dir = modelsDir('cli');
    const pulled = await cli(['pull', `${REPO}:Q8_0`, '--hub-url', hub.url, '--id', 'tiny', '--models-dir', dir]);
    expect(pulled.status, pulled.stderr).toBe(0);
    expect(pulled.stderr).toMatch(/Q8_0\/tiny-Q8_0-00002-of-00002\.gguf\s+20\.0 kB \/ 20\.0 kB\s+100%/);
    expect(pulled.stderr).toContain(`serves tiny, tiny:Q8_0`);
    const bytes = GGUF_REPO_FILES.Q8_0.reduce((n, rel) => n + fs.statSync(path.join(source, rel)).size, 0);
    const listed = await cli(['list', '--models-dir', dir]);
    expect(listed.stdout).toMatch(new RegExp(`^tiny\\s+chat\\s+Q8_0\\s+512\\s+${(bytes / 1000).toFixed(1)} kB\\s+${(bytes / 1000).toFixed(1)} kB$`, 'm'));
    const rm = await cli(['rm', 'tiny:Q8_0', '--models-dir', dir]);
    expect(rm.status, rm.stderr).toBe(0);
    expect(rm.stderr).toContain(`removed ${path.join(dir, 'tiny')}`);
    expect(fs.readdirSync(dir)).toEqual([]);
    const none = await cli(['rm', 'tiny', '--models-dir', dir]);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain(`no model or model folder tiny in ${dir}`);
  });
});
