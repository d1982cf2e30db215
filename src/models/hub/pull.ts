/**
 * `models pull`: fetches the files one dtype of a Hugging Face ONNX export needs, from the hub's
 * `resolve` URLs or a mirror, into models/<id>.
 *
 * Files land in models/.pull-<id>/ first (a dot folder the registry never loads). Each file is
 * downloaded to `<file>.part`, resumed with an HTTP Range request after an interruption, checked
 * against the size and sha256 the hub announces (X-Linked-Size / X-Linked-Etag, or a sha256 ETag),
 * and only then renamed. When every file is in, manifest.json (with the checksums) is written and
 * the folder is renamed to models/<id> in one step: a failed pull never leaves a loadable folder.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describeModel } from '../registry.js';
import { DTYPE_SUFFIX, DTYPES, MODEL_ID_PATTERN, type Dtype } from '../manifest.js';
import type { FileSums } from './checksums.js';

export interface PullOptions {
  repo: string;
  revision: string;
  dtype?: Dtype;
  /** Hub or mirror base URL (HF_ENDPOINT), e.g. https://huggingface.co */
  endpoint: string;
  modelsDir: string;
  /** Folder name / model id; default: the repository name. */
  id?: string;
  /** Called as bytes arrive. */
  onProgress?: (file: string, received: number, total: number | null) => void;
  log?: (line: string) => void;
  /** Authorization for gated repos (HF_TOKEN). */
  token?: string;
}

export class PullError extends Error {}

const REQUIRED = ['config.json', 'tokenizer.json'];
const OPTIONAL = ['generation_config.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja', 'preprocessor_config.json'];
const MAX_DATA_CHUNKS = 64;

export async function pull(options: PullOptions): Promise<{ id: string; dir: string; files: FileSums }> {
  const log = options.log ?? (() => {});
  const id = options.id ?? options.repo.split('/').at(-1)!;
  if (!MODEL_ID_PATTERN.test(id)) throw new PullError(`"${id}" is not a usable model id; choose one with --id`);
  if (!/^[\w.-]+\/[\w.-]+$/.test(options.repo)) throw new PullError(`"${options.repo}" is not a repository name of the form owner/name`);
  const target = path.join(options.modelsDir, id);
  if (fs.existsSync(target)) throw new PullError(`models/${id} already exists; remove it first (models rm ${id}) or pull with --id`);
  const staging = path.join(options.modelsDir, `.pull-${id}`);
  fs.mkdirSync(staging, { recursive: true });

  const files: FileSums = {};
  const get = (rel: string, required: boolean) => download({ ...options, rel, staging, required, files });

  for (const rel of REQUIRED) await get(rel, true);
  const config = JSON.parse(fs.readFileSync(path.join(staging, 'config.json'), 'utf8')) as Record<string, any>;
  const dtype = options.dtype ?? pickDtype(config);
  log(`pulling ${options.repo}@${options.revision} as ${id} (dtype ${dtype})`);
  for (const rel of OPTIONAL) await get(rel, false);
  const onnx = `onnx/model${DTYPE_SUFFIX[dtype]}.onnx`;
  await get(onnx, true);
  if (await get(`${onnx}_data`, false)) {
    for (let chunk = 1; chunk < MAX_DATA_CHUNKS && (await get(`${onnx}_data_${chunk}`, false)); chunk++);
  }

  const manifest = {
    id,
    dtype,
    source: { repo: options.repo, revision: options.revision, endpoint: options.endpoint, pulledAt: new Date().toISOString() },
    files,
  };
  for (const rel of Object.keys(files)) fs.rmSync(path.join(staging, `${rel}.sum`), { force: true });
  fs.writeFileSync(path.join(staging, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  try {
    describeModel(staging, 1);
  } catch (error) {
    throw new PullError(`the files were fetched but the server could not serve them: ${(error as Error).message}`);
  }
  fs.renameSync(staging, target);
  log(`done: models/${id}`);
  return { id, dir: target, files };
}

function pickDtype(config: Record<string, any>): Dtype {
  const configured = config['transformers.js_config']?.dtype;
  return typeof configured === 'string' && (DTYPES as string[]).includes(configured) ? (configured as Dtype) : 'fp32';
}

interface DownloadOptions extends PullOptions {
  rel: string;
  staging: string;
  required: boolean;
  files: FileSums;
}

/** Fetches one file into the staging folder; false when an optional file does not exist. */
async function download(o: DownloadOptions): Promise<boolean> {
  const final = path.join(o.staging, o.rel);
  const part = `${final}.part`;
  const done = `${final}.sum`;
  if (fs.existsSync(final) && fs.existsSync(done)) {
    o.files[o.rel] = JSON.parse(fs.readFileSync(done, 'utf8'));
    return true;
  }
  fs.mkdirSync(path.dirname(final), { recursive: true });
  const url = `${o.endpoint.replace(/\/$/, '')}/${o.repo}/resolve/${encodeURIComponent(o.revision)}/${o.rel}`;
  const offset = fs.existsSync(part) ? fs.statSync(part).size : 0;
  const headers: Record<string, string> = {};
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (offset > 0) headers.range = `bytes=${offset}-`;

  // The hub answers large files with a redirect to a CDN; the size and sha256 are on the first answer.
  let res = await request(url, headers);
  let announced = announcedSums(res.headers);
  for (let hops = 0; res.status >= 300 && res.status < 400 && res.headers.get('location'); hops++) {
    if (hops > 5) throw new PullError(`${o.rel}: too many redirects at ${url}`);
    const next = new URL(res.headers.get('location')!, url).href;
    res = await request(next, headers);
    const more = announcedSums(res.headers);
    announced = { size: announced.size ?? more.size, sha256: announced.sha256 ?? more.sha256 };
  }
  if (res.status === 404) {
    await res.body?.cancel();
    if (!o.required) return false;
    throw new PullError(`${o.repo}@${o.revision} has no ${o.rel} (404 at ${url})`);
  }
  if (res.status === 401 || res.status === 403) throw new PullError(`${o.rel}: access denied (${res.status}); gated repositories need HF_TOKEN`);
  if (res.status !== 200 && res.status !== 206) throw new PullError(`${o.rel}: HTTP ${res.status} from ${url}`);

  const resuming = res.status === 206 && offset > 0;
  const hash = createHash('sha256');
  if (resuming) for await (const chunk of fs.createReadStream(part)) hash.update(chunk as Buffer);
  const contentLength = Number(res.headers.get('content-length'));
  const total = announced.size ?? (Number.isFinite(contentLength) && contentLength > 0 ? contentLength + (resuming ? offset : 0) : null);
  const out = fs.createWriteStream(part, { flags: resuming ? 'a' : 'w' });
  let received = resuming ? offset : 0;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      received += chunk.byteLength;
      if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
      o.onProgress?.(o.rel, received, total);
    }
  } catch (error) {
    throw new PullError(`${o.rel}: download interrupted after ${received} bytes (${(error as Error).message}); run the same pull again to resume`);
  } finally {
    await new Promise<void>((resolve) => out.end(resolve));
  }
  const sha256 = hash.digest('hex');
  if (total !== null && received !== total) {
    throw new PullError(`${o.rel}: got ${received} of ${total} bytes; run the same pull again to resume`);
  }
  if (announced.sha256 && announced.sha256 !== sha256) {
    fs.rmSync(part, { force: true });
    throw new PullError(`${o.rel}: checksum mismatch (sha256 ${sha256}, the hub announced ${announced.sha256}); the partial file was removed, pull again`);
  }
  fs.renameSync(part, final);
  const sum = { size: received, sha256 };
  fs.writeFileSync(done, JSON.stringify(sum));
  o.files[o.rel] = sum;
  return true;
}

async function request(url: string, headers: Record<string, string>): Promise<Response> {
  try {
    return await fetch(url, { headers, redirect: 'manual' });
  } catch (error) {
    throw new PullError(`cannot reach ${new URL(url).origin}: ${(error as Error).message}`);
  }
}

function announcedSums(headers: Headers): { size?: number; sha256?: string } {
  const size = Number(headers.get('x-linked-size'));
  const tag = (headers.get('x-linked-etag') ?? headers.get('etag') ?? '').replace(/^W\//, '').replace(/"/g, '');
  return { size: Number.isFinite(size) && size > 0 ? size : undefined, sha256: /^[0-9a-f]{64}$/.test(tag) ? tag : undefined };
}
