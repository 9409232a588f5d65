/**
 * Receipts at the store level (control/store/receipts.ts): one signed receipt per batch, in
 * the batch's own transaction (a receipt that cannot be written stops the batch with it);
 * every call's proof verifies; batches settled before receipts (migration 9 on an old
 * database, or a store opened without them) get theirs on the next open, in batch order,
 * signed by the current key, once: the database and the data dir record that the backfill
 * ran, either record stops it, and afterwards a batch without a receipt halts the settler
 * instead of being signed. Key rotation and the key file are `receipts-rotation.ts`.
 *
 * Each case runs on both stores (`forEachStore`), editing the database behind the store's back
 * with each one's SQL where it must; the migrations from older SQLite schemas (9, 14) are
 * SQLite's alone.
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import Database from 'better-sqlite3';
import { SettlerHaltedError } from '../../control/settler/settler';
import { Store } from '../../control/store';
import { MIGRATIONS } from '../../control/store/migrations';
import { BACKFILLED_META } from '../../control/store/receipts';
import { BACKFILL_MARKER_FILE } from '../../control/receipts/backfill-marker';
import { RECEIPT_KEY_FILE } from '../../control/receipts/signing-key';
import { jwkThumbprint, receiptHash, verifyCallProof } from '../../protocol/receipts-verify';
import { T0, all, chainProblem, records, seed, settle, settlerOf } from '../fixtures/receipts';
import {
  newInstall,
  openInstall,
  rawExec,
  rawValue,
  sqliteInstall,
  sqlitePath,
  UNDO_POOL_CAPITAL,
  UNDO_UNCOVERED,
  type Install,
} from '../fixtures/store-sql';
import { waitFor } from '../fixtures/stack';
import { forEachStore } from '../fixtures/stores';
import { makeReceipts } from '../../control/receipts/maker';

/** Where the install records that the receipts backfill ran: its database's `meta` row, the data dir's file. */
async function backfillRecords(at: Install): Promise<{ database: boolean; dataDir: boolean }> {
  const row = await rawValue(at, `SELECT value FROM meta WHERE name = '${BACKFILLED_META}'`);
  return { database: row === 1, dataDir: existsSync(join(at.dataDir, BACKFILL_MARKER_FILE)) };
}

/** Settle an install with receipts on, close it; the number of batches. */
async function settledInstall(t: Test, at: Install): Promise<number> {
  const store = await openInstall(t, at);
  await seed(store);
  await store.outcomes.ingest(records(200), T0);
  const made = await settle(store);
  await store.close();
  return made;
}

const deleteNewestReceipt = (at: Install): Promise<unknown> =>
  rawValue(at, `DELETE FROM receipts WHERE batch = (SELECT max(batch) FROM receipts)`);

t.test('each batch commits with its signed receipt; every call has a verifying proof', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openInstall(t, await newInstall(t, kind));
    await seed(store, 20_000); // small pool: some refunds are clamped
    const recs = records(300);
    await store.outcomes.ingest(recs, T0);
    const made = await settle(store);
    t.ok(made > 4, `${made} batches`);
    t.equal(await store.receipts.count(), made, 'one receipt per batch');
    t.same(
      (await all(store)).map((r) => r.batch),
      Array.from({ length: made }, (_, i) => i + 1),
      'batches 1..n in order',
    );
    t.equal(await chainProblem(store), null, 'the chain verifies and sums to the ledger totals');

    const jwks = await store.receipts.jwks();
    let clamped = 0;
    let bad = 0;
    for (const r of recs) {
      const found = await store.receipts.proof(r.call_id);
      if (found.state !== 'settled') {
        bad++;
        continue;
      }
      if (found.proof.leaf.clamp !== null) clamped++;
      const v = verifyCallProof(found.proof, jwks, r.call_id);
      if (!v.ok || v.outcome !== r.outcome) bad++;
    }
    t.equal(bad, 0, 'every call proves its own settled leaf');
    t.ok(clamped > 0, `clamped calls carry their clamp in the leaf (${clamped})`);
    t.same(await store.receipts.proof('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'), { state: 'unknown' });
    const late = records(1, 5000)[0]!;
    await store.outcomes.ingest([late], T0);
    t.same(await store.receipts.proof(late.call_id), { state: 'unsettled' });
    t.equal((await store.ledger.verify()).violation, null, 'ledger verify, receipt checks included');
  });
});

t.test('proofs read one run of 64 calls; without stored runs, or with wrong ones, the whole batch', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const store = await openInstall(t, at);
    await seed(store);
    const recs = records(700);
    await store.outcomes.ingest(recs, T0);
    await settle(store, 400);
    const jwks = await store.receipts.jwks();
    const proofs = async () =>
      (await Promise.all(recs.map((r) => store.receipts.proof(r.call_id)))).map((p) => (p.state === 'settled' ? p.proof : null));
    const verified = (list: Awaited<ReturnType<typeof proofs>>) =>
      list.filter((p, i) => p !== null && verifyCallProof(p, jwks, recs[i]!.call_id).ok).length;
    const fast = await proofs();
    t.equal(verified(fast), recs.length, 'every proof from its run verifies');
    t.ok(
      fast.some((p) => p!.tree_size > 64 && p!.leaf_index >= 64),
      'batches larger than one run',
    );
    const receipts = await all(store);
    for (const r of receipts) {
      const bytes = await rawValue(at, `SELECT length(subtrees) FROM receipts WHERE batch = ${r.batch}`);
      if (bytes !== 32 * Math.ceil(r.tree_size / 64)) t.fail(`batch ${r.batch}: ${String(bytes)} bytes of runs for ${r.tree_size} calls`);
    }
    t.pass('32 bytes per run of 64 calls');

    await rawValue(at, `UPDATE receipts SET subtrees = NULL`);
    const slow = await proofs();
    t.same(slow, fast, 'without stored runs: the same proofs, from the whole batch');
    const zeros = at.url === null ? `zeroblob(64)` : `decode(repeat('00', 64), 'hex')`;
    await rawValue(at, `UPDATE receipts SET subtrees = ${zeros} WHERE batch = 1`);
    t.same(await proofs(), fast, 'wrong stored runs are not used');
    t.match(
      (await store.ledger.verify()).violation ?? '',
      /^batch 1: the run hashes stored for its proofs are not those of its calls/,
      'and ledger verify names them',
    );
  });
});

t.test('a receipt that cannot be written takes its batch with it', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const store = await openInstall(t, at);
    await seed(store);
    await store.outcomes.ingest(records(50), T0);
    await rawExec(
      at,
      `CREATE TRIGGER no_receipts BEFORE INSERT ON receipts BEGIN SELECT RAISE(ABORT, 'receipt refused'); END`,
      `CREATE FUNCTION no_receipts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'receipt refused'; END $$;
       CREATE TRIGGER no_receipts BEFORE INSERT ON receipts FOR EACH ROW EXECUTE FUNCTION no_receipts()`,
    );
    await t.rejects(settle(store), /receipt refused/);
    t.equal(await rawValue(at, `SELECT count(*) FROM settlement_batches`), 0, 'no batch');
    t.equal(await rawValue(at, `SELECT count(*) FROM outcomes WHERE settled_batch IS NOT NULL`), 0, 'no call marked settled');
    t.equal(await rawValue(at, `SELECT count(*) FROM ledger_transfers WHERE kind <> 'fund'`), 0, 'no ledger entry');
    await rawExec(at, `DROP TRIGGER no_receipts`, `DROP TRIGGER no_receipts ON receipts`);
    const made = await settle(store);
    t.equal(await store.receipts.count(), made);
    t.equal(await chainProblem(store), null);
  });
});

t.test('batches settled without receipts get them on the next open, once, in batch order', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const plain = await openInstall(t, at, { receipts: false });
    await seed(plain);
    await plain.outcomes.ingest(records(200), T0);
    const made = await settle(plain);
    t.equal(await plain.receipts.count(), 0, 'none while receipts are off');
    await plain.close();
    t.same(await backfillRecords(at), { database: false, dataDir: false }, 'no backfill recorded while receipts are off');

    const first = await openInstall(t, at);
    t.equal(await first.receipts.count(), made, 'every batch signed on open');
    t.same(await backfillRecords(at), { database: true, dataDir: true }, 'the backfill is recorded in the database and the data dir');
    t.match(JSON.parse(readFileSync(join(at.dataDir, BACKFILL_MARKER_FILE), 'utf8')), { receipts_written: made, backfilled_at: String });
    t.equal(statSync(join(at.dataDir, BACKFILL_MARKER_FILE)).mode & 0o777, 0o600);
    t.equal(await chainProblem(first), null);
    t.equal((await first.ledger.verify()).violation, null);
    const signed = await all(first);
    await first.close();

    const again = await openInstall(t, at);
    t.same(await all(again), signed, 'a second open changes nothing');
    await again.outcomes.ingest(records(60, 200), T0);
    const more = await settle(again);
    t.equal(await again.receipts.count(), made + more, 'settlement continues the chain');
    t.equal(await chainProblem(again), null);
    await again.close();
  });
});

t.test('migration 9 on a database settled before receipts: signed by the first key, in batch order', async (t) => {
  // SQLite's own history: a schema-8 file migrated.
  const dir = t.testdir();
  const settledPath = join(dir, 'settled.db');
  const settled = await Store.open(settledPath, { receipts: false, receiptsCore: makeReceipts });
  await seed(settled);
  await settled.outcomes.ingest(records(150), T0);
  const made = await settle(settled);
  await settled.close();
  // What a schema-8 build left: migrations 1–8 only, holding the same rows.
  const path = join(dir, 'control.db');
  const db = new Database(path);
  for (const m of MIGRATIONS.slice(0, 8)) db.exec(m);
  db.pragma('user_version = 8');
  db.pragma('foreign_keys = OFF');
  db.prepare('ATTACH DATABASE ? AS src').run(settledPath);
  const tables = db
    .prepare(`SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
    .pluck()
    .all() as string[];
  // Before migration 21 the keys held the money: each key's own account's postings go back to
  // `key:<id>` (its account is `acc_` and the key id's random part).
  const asKey = `CASE WHEN account LIKE 'account:acc\\_%' ESCAPE '\\' THEN 'key:key_' || substr(account, 13) ELSE account END`;
  for (const table of tables) {
    const names = (db.pragma(`main.table_info(${table})`) as { name: string }[]).map((c) => c.name);
    const values = names.map((c) => (c === 'account' ? asKey : c));
    db.exec(`DELETE FROM main.${table}; INSERT INTO main.${table} (${names.join(', ')}) SELECT ${values.join(', ')} FROM src.${table}`);
  }
  db.exec('DETACH DATABASE src');
  t.equal(db.prepare('SELECT count(*) FROM settlement_batches').pluck().get(), made, 'the old database holds the settled batches');
  db.close();

  const migrated = await Store.open(path, { receiptsCore: makeReceipts });
  t.teardown(() => migrated.close());
  t.equal(await migrated.schemaVersion(), MIGRATIONS.length);
  t.equal(await migrated.receipts.count(), made);
  const kid = jwkThumbprint(
    createPublicKey(createPrivateKey(readFileSync(join(dir, RECEIPT_KEY_FILE), 'utf8'))).export({ format: 'jwk' }).x!,
  );
  t.same([...new Set((await all(migrated)).map((r) => r.kid))], [kid], "every backfilled receipt carries the data dir key's kid");
  t.equal(await chainProblem(migrated), null);
  t.equal((await migrated.ledger.verify()).violation, null);
  t.same(await backfillRecords(sqliteInstall(dir)), { database: true, dataDir: true }, 'the one backfill is recorded');
  t.equal((await (await settlerOf(migrated)).status()).state, 'idle', 'nothing lacks a receipt');
});

t.test('after the backfill, a batch that lost its receipt is not signed on open: the settler halts on it', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const made = await settledInstall(t, at);
    await deleteNewestReceipt(at);

    const store = await openInstall(t, at);
    t.equal(await store.receipts.count(), made - 1, 'not re-signed');
    t.same(await store.receipts.missing(), { batch: made, count: 1 });
    const settler = await settlerOf(store);
    t.match(await settler.status(), { state: 'halted', halted: { batch: made, batches_without_receipt: 1 } });
    await store.outcomes.ingest(records(10, 500), T0);
    await t.rejects(settler.runOnce(), SettlerHaltedError, 'run-once refused');
    await t.rejects(settler.resume({ actor: 'test' }), SettlerHaltedError, 'resume refused');
    t.equal((await store.settlement.backlog()).count, 10, 'nothing settled');
  });
});

t.test('an install that had receipts when migration 14 came is recognised: no backfill ever again', async (t) => {
  // SQLite's own history: a schema-13 file migrated.
  const dir = t.testdir();
  const at = sqliteInstall(dir);
  const path = sqlitePath(at);
  const made = await settledInstall(t, at);
  // What a schema-13 build left: receipts for every batch, no record of the backfill; then the
  // newest batch's receipt deleted.
  const db = new Database(path);
  db.exec(`DELETE FROM meta WHERE name = '${BACKFILLED_META}'`);
  // And nothing of the migrations after 14 (15: the gateways' control and engine; 16: operators,
  // their tokens, the audit log's token and approver; 17: approval requests; 18: the outcomes'
  // index by key; 19: outcomes split into records, the queue and settled calls, its index by
  // key with them; 20: accounts, each key's account; 21: the refills' record, which names the
  // accounts; 22: endpoints' billing, the escrows, which name the accounts; 23: the pool's
  // providers, their share events and withdrawals, the refund caps; 24: the uncovered calls).
  db.exec(UNDO_UNCOVERED.sqlite);
  db.exec(UNDO_POOL_CAPITAL.sqlite);
  db.exec(`ALTER TABLE gateways DROP COLUMN control_id; ALTER TABLE gateways DROP COLUMN engine`);
  db.exec(`DROP TABLE operator_tokens; DROP TABLE operators`);
  db.exec(`DROP TABLE approvals`);
  db.exec(`CREATE TABLE outcomes_v18 AS SELECT * FROM outcomes; DROP VIEW outcomes`);
  db.exec(`DROP TABLE settled_calls; DROP TABLE unsettled_outcomes; DROP TABLE outcome_records`);
  db.exec(`ALTER TABLE outcomes_v18 RENAME TO outcomes`);
  db.exec(`ALTER TABLE audit_log DROP COLUMN token_id; ALTER TABLE audit_log DROP COLUMN approved_by`);
  db.exec(
    `DROP TABLE account_refills; DROP TABLE account_escrows; DROP INDEX keys_by_account; ALTER TABLE keys DROP COLUMN account_id; DROP TABLE accounts`,
  );
  db.exec(`ALTER TABLE endpoints DROP COLUMN billing`);
  db.pragma('user_version = 13');
  db.close();
  await deleteNewestReceipt(at);
  rmSync(join(dir, BACKFILL_MARKER_FILE));

  const store = await openInstall(t, at);
  t.same(await backfillRecords(at), { database: true, dataDir: true }, 'migration 14 records it; the open writes the data dir record');
  t.equal(await store.receipts.count(), made - 1, 'the batch without its receipt is not signed');
  t.equal((await (await settlerOf(store)).status()).halted?.batch, made);
});

t.test('either record alone stops the backfill, and the missing one is written again', async (t) => {
  forEachStore(t, async (t, kind) => {
    for (const kept of ['database', 'dataDir'] as const) {
      const dir = join(t.testdir(), kept);
      mkdirSync(dir);
      const at = await newInstall(t, kind, dir);
      const made = await settledInstall(t, at);
      if (kept === 'database') rmSync(join(dir, BACKFILL_MARKER_FILE));
      else await rawValue(at, `DELETE FROM meta WHERE name = '${BACKFILLED_META}'`);
      await deleteNewestReceipt(at);
      t.same(await backfillRecords(at), { database: kept === 'database', dataDir: kept === 'dataDir' });

      const store = await openInstall(t, at);
      t.equal(await store.receipts.count(), made - 1, `only the ${kept} record: not re-signed`);
      await store.close();
      t.same(await backfillRecords(at), { database: true, dataDir: true }, `only the ${kept} record: both written`);
    }
  });
});

t.test('a receipt lost while control runs: the next batch rolls back and halts the settler; reissue lifts it', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const store = await openInstall(t, at);
    await seed(store);
    await store.outcomes.ingest(records(100), T0);
    const settler = await settlerOf(store);
    const made = (await settler.runOnce()).batches.length;
    t.equal((await settler.status()).state, 'idle');
    // Behind the store's back, on a connection of its own.
    await deleteNewestReceipt(at);
    await store.outcomes.ingest(records(10, 500), T0);
    const refused = await settler.runOnce().catch((err: unknown) => err);
    t.type(refused, SettlerHaltedError);
    t.match(await settler.status(), { state: 'halted', halted: { batch: made } });
    t.equal((await store.settlement.lastBatch())?.id, made, 'the batch that found the gap rolled back');
    t.equal((await store.settlement.backlog()).count, 10);

    const earlier = (await store.receipts.get(made - 1))!;
    await t.rejects(store.receipts.reissue(made - 1), { name: 'ReissueError', reason: 'has_receipt' });
    await t.rejects(store.receipts.reissue(made + 1), { name: 'ReissueError', reason: 'no_batch' });
    const reissued = await store.receipts.reissue(made);
    t.equal(reissued.prev, receiptHash(earlier), 'chained to the receipt before it');
    t.equal(await settler.checkReceipts(), null, 'the halt is lifted');
    t.equal((await settler.runOnce()).backlog, 0, 'settlement goes on');
    t.equal(await chainProblem(store), null);
  });
});

/**
 * Whether another connection is writing receipts in a transaction not yet committed: on SQLite,
 * the write lock is held (a write transaction cannot begin); on PostgreSQL, a backend holds the
 * row-exclusive lock on `receipts` that an insert takes until its transaction ends.
 */
async function receiptsBeingWritten(at: Install): Promise<boolean> {
  if (at.url === null) {
    const db = new Database(sqlitePath(at), { timeout: 0 });
    try {
      db.exec('BEGIN IMMEDIATE');
      db.exec('ROLLBACK');
      return false;
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_BUSY') return true;
      throw err;
    } finally {
      db.close();
    }
  }
  const held = await rawValue(
    at,
    `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
      WHERE c.relname = 'receipts' AND l.mode = 'RowExclusiveLock' AND l.pid <> pg_backend_pid()`,
  );
  return Number(held) > 0;
}

t.test('SIGKILL during the backfill on open: no receipt of it is kept, then the next open signs all', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await newInstall(t, kind);
    const plain = await openInstall(t, at, { receipts: false });
    await seed(plain);
    // Enough batches that the backfill takes longer than the child lives (PostgreSQL's takes round trips per batch).
    const calls = kind === 'sqlite' ? 120_000 : 40_000;
    for (let i = 0; i < calls; i += 5000) await plain.outcomes.ingest(records(5000, i), T0);
    const made = await settle(plain, 200);
    await plain.close();

    // The built store, opened in a process of its own and killed while it signs.
    const dist = resolve(__dirname, '..', '..', 'dist', 'control', 'store');
    const core = `receiptsCore: require(${JSON.stringify(resolve(dist, '..', 'receipts', 'maker.js'))}).makeReceipts`;
    const opening =
      at.url === null
        ? `require(${JSON.stringify(join(dist, 'index.js'))}).Store.open(${JSON.stringify(sqlitePath(at))}, { ${core} })`
        : `require(${JSON.stringify(join(dist, 'pg', 'store.js'))}).PgStore.open(${JSON.stringify(at.url)}, { dataDir: ${JSON.stringify(at.dataDir)}, ${core} })`;
    const child = spawn(process.execPath, ['-e', `${opening}.then(() => process.stdout.write('opened'))`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((r) => child.on('exit', r));
    // Killed while the backfill's transaction is open, never before it began nor after it committed.
    const seen = await waitFor(
      async () => (out === 'opened' ? 'opened' : (await receiptsBeingWritten(at)) ? 'signing' : false),
      'the backfill under way',
    );
    child.kill('SIGKILL');
    await exited;
    t.equal(seen, 'signing', 'killed while the backfill was signing (not after the open finished)');

    t.equal(Number(await rawValue(at, `SELECT count(*) FROM receipts`)), 0, 'the killed backfill kept no receipt');

    const reopened = await openInstall(t, at);
    t.equal(await reopened.receipts.count(), made, 'the next open signs every batch');
    t.equal(await chainProblem(reopened), null);
  });
});
