/**
 * Every file control and a gateway write under the data dir is 0600, and every directory they
 * create is 0700, whatever the process umask or the data dir's own mode (docs/design.md §2: the
 * database holds injected upstream credentials). Control and a gateway run as real processes
 * with umask 000 on a 0777 data dir; after admin writes, proxied calls, shipped and settled
 * outcomes, the whole tree is walked (while both run, so SQLite's -wal and -shm are there,
 * and again after they stop).
 */
import t, { type Test } from 'tap';
import { chmodSync, lstatSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { drained, request, startControlProcess, startGatewayProcess, type ServiceProcess } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';

/** Every entry under `root` (not `root` itself) with its type and permission bits. */
function walk(root: string, dir = root, out: { path: string; kind: 'file' | 'dir' | 'other'; mode: number }[] = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = lstatSync(path);
    const kind = stat.isFile() ? 'file' : stat.isDirectory() ? 'dir' : 'other';
    out.push({ path: relative(root, path), kind, mode: stat.mode & 0o777 });
    if (kind === 'dir') walk(root, path, out);
  }
  return out;
}

function assertPrivate(t: Test, dataDir: string, when: string): string[] {
  const entries = walk(dataDir);
  for (const e of entries) {
    if (e.kind === 'file') t.equal(e.mode.toString(8), '600', `${when}: ${e.path} is 0600`);
    if (e.kind === 'dir') t.equal(e.mode.toString(8), '700', `${when}: ${e.path}/ is 0700`);
  }
  return entries.filter((e) => e.kind === 'file').map((e) => e.path);
}

t.test('files under the data dir are 0600 with umask 000 and a 0777 data dir', async (t) => {
  const dataDir = t.testdir({ data: {} }) + '/data';
  chmodSync(dataDir, 0o777);
  // Children inherit the umask they are spawned with.
  const umask = process.umask(0);
  t.teardown(() => void process.umask(umask));

  const up = await startUpstream(t);
  const control: ServiceProcess = await startControlProcess(t, { dataDir });
  const gateway = await startGatewayProcess(t, { dataDir, controlUrl: control.url, id: 'gw-modes' });
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await request(control.url, path, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
    t.ok(res.status < 300, `${method} ${path}: ${res.status}`);
    return res.body;
  };

  await admin('POST', '/_admin/v1/endpoints', { id: 'modes', upstream: `${up.url}/base`, price: 1000, premium: 100 });
  const key = await admin('POST', '/_admin/v1/keys', { name: 'modes' });
  await admin('POST', '/_admin/v1/pool/fund', { amount: 1_000_000, note: 'modes' });
  const flag = await admin('PUT', '/_admin/v1/flags/beta_gate_enabled', { value: true, note: 'modes' });
  await admin('POST', '/_admin/v1/sync/wait', { version: flag.version, timeout_ms: 10_000 });
  for (let i = 0; i < 3; i++) {
    const res = await request(gateway.url, `/modes/call-${i}`, { body: '{}', headers: { authorization: `Bearer ${key.key}` } });
    t.equal(res.status, 200, `call ${i} proxied`);
  }
  await drained(gateway.url);
  await admin('POST', '/_admin/v1/settler/run-once');

  const files = assertPrivate(t, dataDir, 'running');
  for (const expected of [
    'control.db',
    'control.db-wal',
    'control.db-shm',
    'admin.token',
    'sync.token',
    'metrics.token',
    'control.json',
    'receipt-signing.key',
    'receipts-backfilled.json',
  ]) {
    t.ok(files.includes(expected), `${expected} was written (and checked)`);
  }
  t.ok(
    files.some((f) => f.startsWith('gateway-gw-modes/journal/outcomes-')),
    'a journal segment was written',
  );
  t.ok(files.includes('gateway-gw-modes/journal/acks.json'), 'the ack cursor was written');
  t.ok(
    files.some((f) => f.startsWith('gateway-gw-modes/snapshot/')),
    'the last-known-good snapshot was written',
  );

  await gateway.stop();
  await control.stop();
  assertPrivate(t, dataDir, 'stopped');
});
