/**
 * The receipt signing key never leaves its file (docs/design.md §11). With control, svcctl and debug
 * logging as real processes: outcomes are settled, the key is rotated, every receipt read and
 * admin answer is fetched, and an admin error is provoked. Neither the first key nor the
 * second appears (as PEM, or its private scalar in base64url, base64 or hex) in control's
 * logs, any answer, any CLI output, or any other file of the data dir (database and WAL
 * included); the key file itself is 0600 and holds only the current key.
 */
import t from 'tap';
import { createPrivateKey } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RECEIPT_KEY_FILE } from '../../control/receipts/signing-key';
import { Store } from '../../control/store';
import { outcome, saveEndpoint } from '../fixtures/settlement';
import { request, startControlProcess, svcctl } from '../fixtures/stack';
import { makeReceipts } from '../../control/receipts/maker';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The forms a leaked Ed25519 private key could take. */
function forms(pem: string): string[] {
  const d = Buffer.from(createPrivateKey(pem).export({ format: 'jwk' }).d!, 'base64url');
  const body = pem
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('-----'))
    .join('');
  return [body, d.toString('base64url'), d.toString('base64').replace(/=+$/, ''), d.toString('hex')];
}

t.test('the receipt signing key is in its file and nowhere else', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const keyFile = join(dataDir, RECEIPT_KEY_FILE);
  const t0 = Date.now() - 60_000;
  const store = await Store.open(join(dataDir, 'control.db'), { receiptsCore: makeReceipts });
  await saveEndpoint(store, 'ep', { price: 1000, premium: 100 });
  await store.mutate({ actor: 'test', now: t0 }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(1_000_000, t0, 'test', null));
  const records = Array.from({ length: 20 }, (_, i) =>
    outcome({ endpoint_id: 'ep', outcome: i % 2 ? 'server_error' : 'ok', started: t0 + i }),
  );
  await store.outcomes.ingest(records.slice(0, 10), t0);
  await store.close();
  const firstPem = readFileSync(keyFile, 'utf8');
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'the key file is 0600');

  const control = await startControlProcess(t, { dataDir, env: { SVC_LOG_LEVEL: 'debug' } });
  const cli = (...args: string[]) => svcctl(['--data-dir', dataDir, ...args]);
  const outputs: string[] = [];
  const run = async (...args: string[]) => {
    const r = await cli(...args);
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  t.equal((await run('settler', 'run-once')).code, 0);
  const rotated = await run('receipts', 'rotate-key', '--json');
  t.equal(rotated.code, 0, rotated.stderr);
  t.equal((await run('receipts', 'rotate-key')).code, 0, 'and once more, with text output');
  const lastPem = readFileSync(keyFile, 'utf8');
  t.not(lastPem, firstPem);

  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const indexer = control.urls.indexer!;
  const bodies: string[] = [];
  for (const path of [
    '/api/receipts/keys',
    '/api/receipts',
    '/api/receipts/1',
    `/api/calls/${records[1]!.call_id}/proof`,
    '/api/stats',
    `/api/calls/${records[15]!.call_id}/proof`,
  ]) {
    bodies.push((await request(indexer, path, { method: 'GET' })).text);
  }
  for (const path of ['/_admin/v1/audit', '/_admin/v1/status', '/_admin/v1/ledger/verify']) {
    bodies.push((await request(control.url, path, { method: 'GET', headers: { authorization: `Bearer ${adminToken}` } })).text);
  }
  bodies.push(
    (await request(control.url, '/_admin/v1/receipts/rotate-key', { method: 'GET', headers: { authorization: `Bearer ${adminToken}` } }))
      .text,
  );
  t.ok(
    bodies.some((b) => b.includes('receipts.rotate_key')),
    'the rotations are in the audit log',
  );
  outputs.push((await run('receipts', 'verify', '--json')).stdout);
  await control.stop();

  const files = filesUnder(dataDir).filter((f) => f !== keyFile);
  t.ok(
    files.some((f) => f.endsWith('control.db')),
    'the database is among the files searched',
  );
  const logs = control.stdout() + control.stderr();
  t.ok(logs.length > 0, 'control logged');
  // The search works: the current key's PEM body is found in its own file.
  t.ok(readFileSync(keyFile).includes(Buffer.from(forms(lastPem)[0]!)), 'the search finds the current key in the key file');
  for (const [name, pem] of [
    ['first', firstPem],
    ['last', lastPem],
  ] as const) {
    const needles = forms(pem);
    const where: string[] = [];
    for (const needle of needles) {
      for (const f of files) if (readFileSync(f).includes(Buffer.from(needle))) where.push(f);
      if (logs.includes(needle)) where.push('control logs');
      if (bodies.some((b) => b.includes(needle))) where.push('an HTTP answer');
      if (outputs.some((o) => o.includes(needle))) where.push('svcctl output');
    }
    t.same(where, [], `the ${name} key is nowhere else`);
  }
  t.notOk(readFileSync(keyFile, 'utf8').includes(forms(firstPem)[0]!), 'the rotated-out key is gone from the file');
});
