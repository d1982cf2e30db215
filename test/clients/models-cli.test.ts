/**
 * The models command as a user runs it (the npm bin, in a child process): `list` and `ps` give a
 * model's size in one measure under one header (WEIGHTS: the ONNX graph and its external data, or
 * the GGUF file, the server's file_bytes), and `unpack` names the folder it would overwrite, wherever
 * --models-dir points. Run on either engine's models folder (TEST_CHAT_ENGINE).
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatBytes } from '../../src/models/hub/checksums.js';
import { CHAT_MODEL, EMBED_MODEL, ENGINE, ROOT, SERVED_MODELS_DIR } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

/** Asynchronous: the server this test runs in its own process must keep answering. */
const cli = (args: string[]) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [path.join(ROOT, 'bin/models.js'), ...args], { env: { ...process.env, API_KEYS: '' } }, (error, stdout, stderr) =>
      resolve({ status: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });

/** A printed table as rows of cells by header (cells are two or more spaces apart). */
function readTable(text: string): Record<string, string>[] {
  const [header, ...rows] = text.trimEnd().split('\n').map((line) => line.split(/ {2,}/));
  return rows.map((cells) => Object.fromEntries(header!.map((h, i) => [h, cells[i] ?? ''])));
}

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'models-cli-'));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('models list and models ps', () => {
  let server: RealServer;
  beforeAll(async () => {
    // Nothing loaded: `ps --all` lists unloaded models with their size too.
    server = await startRealServer({ lifecycle: { pinned: [], keepAliveMs: -1, maxLoadedModels: 0, loadTimeoutMs: 60_000 } });
  });
  afterAll(() => server?.close());

  it('report the same WEIGHTS for every model: the server\'s file_bytes', async () => {
    // The folder the server serves: on llama.cpp, the chat model is a GGUF file.
    const listed = await cli(['list', '--models-dir', SERVED_MODELS_DIR]);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^ID\s+TASK\s+DTYPE\s+CONTEXT\s+WEIGHTS\s+FOLDER\n/);
    const shown = await cli(['ps', '--url', server.url, '--all']);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^ID\s+TASK\s+STATE\s+WEIGHTS\s+CONTEXT\s+KV\s+LOADED FOR\s+IDLE FOR\s+UNLOADS\n/);
    const { data } = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: { id: string; file_bytes: number; context_length: number }[] };

    const list = readTable(listed.stdout);
    const ps = readTable(shown.stdout);
    for (const id of [CHAT_MODEL, EMBED_MODEL]) {
      const weights = formatBytes(data.find((m) => m.id === id)!.file_bytes);
      expect(list.find((r) => r.ID === id)?.WEIGHTS, id).toBe(weights);
      expect(ps.find((r) => r.ID === id)?.WEIGHTS, id).toBe(weights);
      // The context served; no KV while unloaded (a loaded GGUF chat model's is in test/model/gguf-context.e2e.test.ts).
      expect(ps.find((r) => r.ID === id)).toMatchObject({ CONTEXT: String(data.find((m) => m.id === id)!.context_length), KV: '-' });
      // The folder holds more than the weights (tokenizer, config), and says so in its own column; a
      // GGUF file holds its tokenizer itself, and its manifest is a few bytes.
      if (ENGINE.oneFile && id === CHAT_MODEL) expect(list.find((r) => r.ID === id)?.FOLDER).toBe(weights);
      else expect(list.find((r) => r.ID === id)?.FOLDER).not.toBe(weights);
    }
    // A GGUF model's DTYPE is its quantization.
    expect(list.find((r) => r.ID === CHAT_MODEL)?.DTYPE).toBe(ENGINE.listedDtype);
  });

  it('ps says when no server answers, and where it looked', async () => {
    // A port that was free a moment ago: nothing listens there.
    const probe = net.createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as net.AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const refused = await cli(['ps', '--url', `http://127.0.0.1:${port}`]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`no server answers at http://127.0.0.1:${port} (ECONNREFUSED): start one with \`npm start\`, or name it with --url`);
  });
});

describe('models pack / unpack with --models-dir', () => {
  it('unpack names the folder that already exists, in the models folder it was given', async () => {
    const from = path.join(root, 'from');
    fs.mkdirSync(path.join(from, 'small'), { recursive: true });
    fs.writeFileSync(path.join(from, 'small', 'config.json'), '{}\n');
    const archive = path.join(root, 'small.tar');
    expect((await cli(['pack', 'small', '-o', archive, '--models-dir', from])).status).toBe(0);

    const to = path.join(root, 'elsewhere');
    const first = await cli(['unpack', archive, '--models-dir', to]);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toContain(`ready: small in ${to}`);
    const again = await cli(['unpack', archive, '--models-dir', to]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain(`${path.join(to, 'small')} already exists; remove it first or unpack with --force`);
    expect((await cli(['unpack', archive, '--models-dir', to, '--force'])).status).toBe(0);

    const missing = await cli(['pack', 'absent', '-o', archive, '--models-dir', from]);
    expect(missing.stderr).toContain(`no model folder ${path.join(from, 'absent')}`);
    const rm = await cli(['rm', 'small', '--models-dir', to]);
    expect(rm.stderr).toContain(`removed ${path.join(to, 'small')}`);
  });

  it('--help is an answer (exit 0); no command is a usage error (exit 2)', async () => {
    const help = await cli(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage:[\s\S]*WEIGHTS/);
    expect((await cli([])).status).toBe(2);
  });
});
