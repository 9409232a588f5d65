/**
 * A full snapshot built once for the whole cluster (control/sync/snapshot.ts `buildOnce`,
 * `ClusterTable.snapshotOnce` in control/store/pg/cluster-table.ts): with two controls on one
 * PostgreSQL database, a fresh gateway on the second control at a version the first control
 * built receives the lines the first stored, byte for byte, without a second read of the keys;
 * a newer version is built again (by whichever control needs it first) and replaces the stored
 * one; gateways of both controls asking at once cause one build; a failed build stores nothing;
 * a control configured with other limits than the builder's sends its own; a build slower than
 * the server's idle-in-transaction limit is stored all the same; a control alone on its
 * database stores nothing.
 *
 * Builds are counted where a build starts: each control's `store.openSnapshotReader()`.
 * Skips without PostgreSQL (`test/fixtures/postgres.ts`).
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { Client } from 'pg';
import { PgStore } from '../../control/store/pg/store';
import { startTestControl, type TestControl } from '../fixtures/control';
import { dial } from '../fixtures/fake-gateway';
import { createDatabase, skipWithoutPostgres } from '../fixtures/postgres';
import { makeReceipts } from '../../control/receipts/maker';

/** Count `control`'s snapshot builds; `fail` makes the next build fail when set. */
function countBuilds(control: TestControl): { builds: number; failNext: boolean } {
  const store = control.handle.ctx.store;
  const open = store.openSnapshotReader.bind(store);
  const counter = { builds: 0, failNext: false };
  store.openSnapshotReader = () => {
    counter.builds++;
    if (counter.failNext) {
      counter.failNext = false;
      throw new Error('snapshot read refused by the test');
    }
    return open();
  };
  return counter;
}

async function database(t: Test, url: string): Promise<Client> {
  const client = new Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  return client;
}

async function storedVersions(db: Client): Promise<number[]> {
  const { rows } = await db.query<{ version: string }>('SELECT version FROM shared_snapshots ORDER BY version');
  return rows.map((r) => Number(r.version));
}

async function issueKeys(control: TestControl, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await control.admin('POST', '/_admin/v1/keys', { name: `agent ${i}` }, control.adminToken);
    if (res.status !== 201) throw new Error(`key issue answered ${res.status}`);
  }
}

/** The lines of a whole snapshot a fresh gateway `id` receives from `control`, and its end line's version and digest. */
async function freshSnapshot(t: Test, control: TestControl, id: string) {
  const gw = await dial(t, control, id);
  const snapshot = await gw.snapshot;
  await gw.close();
  return snapshot;
}

if (!skipWithoutPostgres(t)) {
  t.test('two controls on one database build each full snapshot once', async (t) => {
    const root = t.testdir();
    const databaseUrl = await createDatabase(t);
    const db = await database(t, databaseUrl);
    const first = await startTestControl(t, { dataDir: join(root, 'a'), flags: { databaseUrl } });
    const joined = await startTestControl(t, { dataDir: join(root, 'b'), flags: { databaseUrl } });
    // The later control accepts the first one's tokens (test/control/cluster-tokens.ts).
    const second: TestControl = { ...joined, syncToken: first.syncToken, adminToken: first.adminToken };
    const [a, b] = [countBuilds(first), countBuilds(second)];
    await issueKeys(first, 30);

    const fromA = await freshSnapshot(t, first, 'gw-a');
    t.equal(fromA.computed, fromA.sha256, "gw-a's lines hash to the digest the snapshot states");
    t.same([a.builds, b.builds], [1, 0], 'the first control built the snapshot');

    const fromB = await freshSnapshot(t, second, 'gw-b');
    t.same(fromB, fromA, 'a fresh gateway on the second control receives the same snapshot: version, digest, and lines that hash to it');
    t.same([a.builds, b.builds], [1, 0], 'the second control read the stored lines instead of building');
    // Stored once the first control's own gateway had it; the second control's read waited for that.
    t.same(await storedVersions(db), [fromA.version], 'the one stored snapshot is that version');
    // Shows when the second control has heard of a change made through the first.
    const watcher = await dial(t, second, 'gw-watch');
    t.same(await watcher.snapshot, fromA, 'another gateway on the second control: the stored one again');
    t.same([a.builds, b.builds], [1, 0], 'still without a build');

    await issueKeys(second, 1);
    const newer = await freshSnapshot(t, second, 'gw-c');
    t.ok(newer.version > fromA.version, 'after a change, a fresh gateway gets the newer version');
    t.equal(newer.computed, newer.sha256, 'its lines hash to its digest');
    t.same([a.builds, b.builds], [1, 1], 'the control that needed the newer version first built it');
    t.same(await freshSnapshot(t, first, 'gw-d'), newer, 'the first control now serves the stored newer one');
    t.same([a.builds, b.builds], [1, 1], 'without building it');
    t.same(await storedVersions(db), [newer.version], 'which replaced the older stored snapshot');

    await issueKeys(first, 1);
    await watcher.nextDelta(newer.version + 1);
    const [onA, onB] = await Promise.all([freshSnapshot(t, first, 'gw-e'), freshSnapshot(t, second, 'gw-f')]);
    t.same(onA, onB, 'gateways of both controls asking at once receive the same snapshot');
    t.equal(onA.computed, onA.sha256, 'whose lines hash to its digest');
    t.equal(a.builds + b.builds, 3, 'built by one control: the other waited for it and read it');

    await issueKeys(first, 1);
    await watcher.nextDelta(onA.version + 1);
    const [a0, b0] = [a.builds, b.builds];
    a.failNext = true;
    const failed = await dial(t, first, 'gw-g');
    let received = false;
    void failed.snapshot.then(() => (received = true));
    await failed.closed;
    t.notOk(received, 'a gateway whose control failed to build gets no snapshot: its stream is ended');
    t.equal(a.builds, a0 + 1, 'the first control tried to build');
    t.same(await storedVersions(db), [onA.version], 'a failed build stores nothing');
    const after = await freshSnapshot(t, second, 'gw-h');
    t.ok(after.version > onA.version, 'the next gateway still gets the newest version');
    t.equal(after.computed, after.sha256, 'intact');
    t.equal(b.builds, b0 + 1, 'built by the next control that needed it');
  });

  t.test("a control whose limits differ from the builder's sends its own snapshot", async (t) => {
    const root = t.testdir();
    const databaseUrl = await createDatabase(t);
    const first = await startTestControl(t, { dataDir: join(root, 'a'), flags: { databaseUrl } });
    const joined = await startTestControl(t, { dataDir: join(root, 'b'), flags: { databaseUrl, 'limits.keyCount': 7 } });
    const second: TestControl = { ...joined, syncToken: first.syncToken, adminToken: first.adminToken };
    const [a, b] = [countBuilds(first), countBuilds(second)];
    const fromA = await freshSnapshot(t, first, 'gw-a');
    t.same([a.builds, b.builds], [1, 0], 'the first control built one');
    const fromB = await freshSnapshot(t, second, 'gw-b');
    t.equal(fromB.version, fromA.version, 'the second control sends the same version');
    t.not(fromB.sha256, fromA.sha256, 'but not the same lines: its limits are its own');
    t.equal(fromB.computed, fromB.sha256, 'intact');
    t.same([a.builds, b.builds], [1, 1], 'it built its own');
  });

  t.test('a build that outlasts the idle-in-transaction limit is still stored for the others', async (t) => {
    const url = await createDatabase(t);
    // The server ends a transaction idle for 300 ms: no transaction may stay open across a build.
    const builder = await PgStore.open(url, { dataDir: t.testdir(), idleInTransactionMs: 300, receiptsCore: makeReceipts });
    t.teardown(() => builder.close());
    const other = await PgStore.open(url, { dataDir: t.testdir(), receiptsCore: makeReceipts });
    t.teardown(() => other.close());
    await builder.cluster.heartbeat('control-a', 'http://a.invalid', Date.now(), 60_000);
    await other.cluster.heartbeat('control-b', 'http://b.invalid', Date.now(), 60_000);
    const snapshot = { version: 3, sha256: 'ab'.repeat(32), lines: ['{"type":"snapshot_begin"}', '{"type":"keys","keys":[]}'] };
    const slowBuild = async () => {
      // Outlast the limit, observably: a transaction opened now under the same limit is ended by
      // the server, and one left open across the build, opened before, would have been ended first.
      const witness = new Client({ connectionString: url, options: '-c idle_in_transaction_session_timeout=300' });
      witness.on('error', () => undefined);
      await witness.connect();
      const ended = new Promise((resolve) => witness.once('end', resolve)); // after its 'error'
      await witness.query('BEGIN');
      await ended;
      return snapshot;
    };
    t.same(await builder.cluster.snapshotOnce(7, 3, 'control-a', slowBuild), { built: snapshot }, 'built, slower than the limit');
    const refuse = () => Promise.reject(new Error('the stored snapshot should have been read'));
    t.same(await other.cluster.snapshotOnce(7, 3, 'control-b', refuse), { stored: snapshot }, 'and stored: the other reads it');
    t.same(await other.cluster.snapshotOnce(7, 2, 'control-b', refuse), { stored: snapshot }, 'also for an older version wanted');
    t.same(
      await other.cluster.snapshotOnce(8, 3, 'control-b', async () => ({ ...snapshot, version: 4 })),
      { built: { ...snapshot, version: 4 } },
      'another epoch does not read it',
    );
  });

  t.test('a control alone on its database stores no snapshot', async (t) => {
    const databaseUrl = await createDatabase(t);
    const db = await database(t, databaseUrl);
    const alone = await startTestControl(t, { flags: { databaseUrl } });
    await issueKeys(alone, 3);
    const snapshot = await freshSnapshot(t, alone, 'gw-alone');
    t.equal(snapshot.computed, snapshot.sha256, 'the gateway gets its snapshot');
    t.same(await storedVersions(db), [], 'with no other control registered, nothing is written for one');
  });
}
