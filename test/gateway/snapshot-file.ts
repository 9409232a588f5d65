// The gateway's last-known-good state on disk (`gateway/state/snapshot-file.ts`): a full
// snapshot committed whole, deltas appended after it and found again by a process that starts
// after a crash (written before `appendDelta` returns, synced in the background), a torn last
// delta dropped, the deltas cleared by the next full snapshot, and `close()` only after the
// background sync; keys' accounts, prepaid endpoints and funded accounts survive the round trip.
import t from 'tap';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { DELTAS_FILE, SNAPSHOT_FILE, SnapshotFile } from '../../gateway/state/snapshot-file';
import { SnapshotDigest, sealDelta, type SnapshotEndpoint, type SnapshotKey } from '../../protocol/snapshot';

const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');
const key = (i: number): SnapshotKey => ({
  id: `key_${String(i).padStart(8, '0')}`,
  secrets: [{ hash: hashOf(`s${i}`), expires_at: null }],
  expires_at: null,
  endpoints: [],
  limit: null,
  lift: null,
});

/** Write a full snapshot of `keys` at `version` through the file's writer. */
function writeFull(file: SnapshotFile, version: number, keys: SnapshotKey[], endpoints: SnapshotEndpoint[] = []): void {
  const begin = JSON.stringify({
    type: 'snapshot_begin',
    version,
    epoch: 1,
    generated_at: new Date(1_700_000_000_000).toISOString(),
    flags: { beta_gate_enabled: true, maintenance_mode: false },
    limits: { key: { count: 60, window_seconds: 60, burst: 10 }, ip: { count: 10, window_seconds: 60, burst: 5 } },
    endpoints,
    key_count: keys.length,
  });
  const line = JSON.stringify({ type: 'keys', keys });
  const digest = new SnapshotDigest();
  digest.update(begin);
  digest.update(line);
  const writer = file.beginFull();
  writer.write(begin);
  writer.write(line);
  writer.write(JSON.stringify({ type: 'snapshot_end', version, sha256: digest.digest() }));
  writer.commit();
}

const delta = (base: number, version: number, upsert: SnapshotKey[], remove: string[] = []) =>
  sealDelta({ type: 'delta', version, base, keys_upsert: upsert, keys_remove: remove }).line;

t.test('a delta is in the file when appendDelta returns: a process starting after a crash applies it', async (t) => {
  const dir = t.testdir();
  const file = new SnapshotFile(dir);
  writeFull(file, 5, [key(1), key(2)]);
  file.appendDelta(delta(5, 6, [key(3)]));
  file.appendDelta(delta(6, 7, [], [key(1).id]));
  // No close, no wait for the background sync: what a kill -9 right after the ack leaves.
  const loaded = await new SnapshotFile(dir).load();
  t.ok(loaded, 'the state loads');
  t.equal(loaded!.state.version, 7, 'both deltas applied');
  t.equal(loaded!.deltasApplied, 2);
  t.equal(loaded!.state.keyCount, 2, 'key 3 added, key 1 removed');
  await file.close();
});

t.test("keys' accounts, prepaid billing and funded accounts round-trip through the files", async (t) => {
  const dir = t.testdir();
  const file = new SnapshotFile(dir);
  const paid: SnapshotEndpoint = {
    id: 'paid',
    upstream: 'http://127.0.0.1:9/',
    methods: ['POST'],
    timeout_ms: 1000,
    sla_ms: 500,
    price: 0,
    premium: 500,
    headers: {},
    billing: 'prepaid',
  };
  const restricted = { ...key(2), endpoints: ['paid'], account: 'acc_two' };
  writeFull(file, 5, [{ ...key(1), account: 'acc_one' }, restricted], [paid, { ...paid, id: 'free', billing: undefined }]);
  file.appendDelta(
    sealDelta({ type: 'delta', version: 6, base: 5, keys_upsert: [{ ...key(3), account: 'acc_three' }], accounts_funded: ['acc_one'] })
      .line,
  );
  await file.close();
  const loaded = await new SnapshotFile(dir).load();
  t.equal(loaded!.state.version, 6, 'the delta with accounts_funded applied on load');
  const accountOf = (i: number) => loaded!.state.lookup(hashOf(`s${i}`), Date.now())?.account;
  t.same([accountOf(1), accountOf(2), accountOf(3)], ['acc_one', 'acc_two', 'acc_three']);
  t.equal(loaded!.state.endpoints.get('paid')!.prepaid, true);
  t.equal(loaded!.state.endpoints.get('free')!.prepaid, false);
});

t.test('synced() and close() resolve once the background sync has run; the deltas survive a clean stop', async (t) => {
  const dir = t.testdir();
  const file = new SnapshotFile(dir);
  writeFull(file, 1, [key(1)]);
  let synced = false;
  file.appendDelta(delta(1, 2, [key(101)]));
  const waiting = file.synced().then(() => (synced = true));
  await Promise.resolve();
  // The ack that follows appendDelta in the same turn does not wait for the disk.
  t.notOk(synced, 'appendDelta returned with its sync still running');
  await waiting;
  t.ok(synced);
  for (let v = 2; v < 40; v++) file.appendDelta(delta(v, v + 1, [key(100 + v)]));
  await file.synced();
  t.equal(readFileSync(join(dir, DELTAS_FILE), 'utf8').trim().split('\n').length, 39, 'every delta written');
  file.appendDelta(delta(40, 41, [key(200)]));
  await file.close();
  const loaded = await new SnapshotFile(dir).load();
  t.equal(loaded!.state.version, 41);
  t.equal(loaded!.deltasApplied, 40);
});

t.test('a torn last delta is dropped, and later deltas follow the last good one', async (t) => {
  const dir = t.testdir();
  const file = new SnapshotFile(dir);
  writeFull(file, 3, [key(1)]);
  file.appendDelta(delta(3, 4, [key(2)]));
  await file.close();
  appendFileSync(join(dir, DELTAS_FILE), delta(4, 5, [key(3)]).slice(0, 40)); // a write cut short
  const again = new SnapshotFile(dir);
  const loaded = await again.load();
  t.equal(loaded!.state.version, 4, 'stops before the torn line');
  again.appendDelta(delta(4, 5, [key(3)]));
  await again.close();
  const third = await new SnapshotFile(dir).load();
  t.equal(third!.state.version, 5, 'the delta appended after the truncation applies');
  t.equal(third!.deltasApplied, 2);
});

t.test('a new full snapshot clears the deltas of the old one', async (t) => {
  const dir = t.testdir();
  const file = new SnapshotFile(dir);
  writeFull(file, 1, [key(1)]);
  file.appendDelta(delta(1, 2, [key(2)]));
  writeFull(file, 9, [key(7), key(8), key(9)]);
  await file.close();
  t.equal(readFileSync(join(dir, DELTAS_FILE), 'utf8'), '', 'deltas file emptied');
  const loaded = await new SnapshotFile(dir).load();
  t.equal(loaded!.state.version, 9);
  t.equal(loaded!.state.keyCount, 3);
  t.equal(loaded!.deltasApplied, 0);
});

t.test('no snapshot yet: nothing loads, and an aborted full snapshot leaves nothing behind', async (t) => {
  const dir = t.testdir();
  const file = new SnapshotFile(dir);
  t.equal(await file.load(), null);
  const writer = file.beginFull();
  writer.write('{"type":"snapshot_begin"}');
  writer.abort();
  t.notOk(existsSync(join(dir, SNAPSHOT_FILE)), 'no snapshot file');
  t.equal(await file.load(), null);
  await file.close();
});
