/**
 * Records what each real client puts on the wire: runs the cases of test/helpers/client-cases.ts
 * against the capture server (test/helpers/capture-server.ts) and writes one fixture per case to
 * test/fixtures/clients/<client>-<case>.json (credentials redacted).
 *
 *   tsx scripts/capture/capture-clients.ts [--out DIR] [CASE|CLIENT ...]   (none = all)
 *
 * Traffic goes to 127.0.0.1 only. The Claude Code cases run the native CLI with a temp HOME.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CapturedRequest } from '../../test/helpers/capture-server.js';
import { captureCase, CLIENT_CASES, firstTurnSummary } from '../../test/helpers/client-cases.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Read from node_modules directly: some packages do not export ./package.json. */
const versionOf = (pkg: string) => (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;

const argv = process.argv.slice(2);
const outIndex = argv.indexOf('--out');
const out = outIndex >= 0 ? path.resolve(argv[outIndex + 1]!) : path.join(ROOT, 'test', 'fixtures', 'clients');
const wanted = argv.filter((_, i) => outIndex < 0 || (i !== outIndex && i !== outIndex + 1));
fs.mkdirSync(out, { recursive: true });
for (const c of CLIENT_CASES) {
  const id = `${c.client}-${c.name}`;
  if (wanted.length && !wanted.includes(id) && !wanted.includes(c.client)) continue;
  const { requests, outcome, normalize } = await captureCase(c);
  const fixture = {
    client: c.client, case: c.name, description: c.description,
    packages: Object.fromEntries(c.packages.map((p) => [p, versionOf(p)])), node: process.version,
    capturedWith: 'scripts/capture/capture-clients.ts against test/helpers/capture-server.ts',
    ...(c.client === 'claude-code' ? { firstTurn: normalize(firstTurnSummary(requests)) } : {}),
    requests: normalize(requests) as CapturedRequest[],
    outcome: normalize(outcome),
  };
  const file = path.join(out, `${id}.json`);
  fs.writeFileSync(file, `${JSON.stringify(fixture, null, 2)}\n`);
  const lines = requests.map((r) => `    ${r.method} ${r.url} -> ${r.response.status} ${r.response.kind}${r.bodyChars ? ` (${r.bodyChars} chars)` : ''}`);
  console.log(`${id}: ${outcome.ok ? 'ok' : 'FAILED'} -> ${file}\n${lines.join('\n')}`);
  if (!outcome.ok) console.log(`    ${outcome.error?.split('\n')[0]}`);
}
