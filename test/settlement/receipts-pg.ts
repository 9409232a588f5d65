/**
 * The receipts table (control/store/sql/receipts.ts) on PostgreSQL against itself on SQLite, on
 * the same settled rows: batches of 1 to 130 calls, calls that arrived in the same millisecond,
 * call ids that a linguistic collation would order differently. Both sign byte-identical
 * receipts with the same key (leaves in the same order), their proofs verify, and the audit
 * (control/store/receipts-audit.ts), which reads in keyset pages inside one snapshot, gives the
 * same verdicts on both, whatever the page size, also when a page ends inside a batch or
 * between calls of the same millisecond. Append refuses a gap; reissue fills it.
 */
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { Pool } from 'pg';
import { openDatabase, type Db } from '../../control/store/db';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { ReceiptSigner } from '../../control/receipts/signing-key';
import { ReceiptMaker, type ReceiptsOptions } from '../../control/receipts/maker';
import { MissingReceiptError } from '../../control/store/receipts';
import { SqlReceiptsTable } from '../../control/store/sql/receipts';
import { RECORD_COLUMNS } from '../../control/store/sql/outcomes';
import { SqliteConn } from '../../control/store/sqlite-conn';
import { receiptChainViolation, receiptRootViolation } from '../../control/store/receipts-audit';
import type { Conn } from '../../control/store/conn';
import { PgConn, sql } from '../../control/store/pg/conn';
import { migratePg } from '../../control/store/pg/migrate';
import { PG_TYPES } from '../../control/store/pg/types';
import type { Outcome } from '../../protocol/outcome';
import { ChainVerifier, ReceiptKeyring, receiptHash, verifyCallProof } from '../../protocol/receipts-verify';
import { withPostgres } from '../fixtures/postgres';

const T0 = Date.UTC(2030, 0, 1, 12);
const SIZES = [1, 64, 65, 130, 3, 7];
const KINDS: Outcome[] = ['ok', 'server_error', 'ok', 'network_error', 'client_error', 'latency_breach'];
/**
 * Call ids (lowercase UUIDs) mixing digits and letters in the places that decide their order:
 * SQLite orders them as text, PostgreSQL as `uuid` bytes, and the two must agree.
 */
const PREFIXES = ['a0b1c2d3', '9f8e7d6c', '0a0a0a0a', 'ffffffff', '00000000', 'a0b1c2d4', '10000000', 'efffffff'];

interface Row {
  call_id: string;
  key_id: string | null;
  endpoint_id: string;
  method: string;
  status: number;
  outcome: Outcome;
  latency_ms: number;
  started_at: number;
  gateway_id: string;
  /** Postpaid calls here: nothing reserved (migration 22's columns). */
  reserved: null;
  instance: null;
  uncovered: 0;
  received_at: number;
  settled_batch: number;
  premium: number;
  refund: number;
  refund_owed: number;
  clamp: string | null;
}

interface BatchRow {
  id: number;
  endpoint_id: string;
  created_at: number;
  calls: number;
  premiums: number;
  treasury_fees: number;
  refunds: number;
  refunds_owed: number;
  clamped_calls: number;
}

/** Settled batches of `SIZES` calls, consistent with their calls; seven calls per received millisecond. */
function settledRows(): { batches: BatchRow[]; calls: Row[] } {
  const batches: BatchRow[] = [];
  const calls: Row[] = [];
  let n = 0;
  SIZES.forEach((size, b) => {
    const id = b + 1;
    const endpoint = id % 2 ? 'ep-a' : 'ep-b';
    const mine: Row[] = [];
    for (let i = 0; i < size; i++, n++) {
      const kind = KINDS[n % KINDS.length]!;
      const refund = kind === 'server_error' || kind === 'network_error' || kind === 'latency_breach' ? 1000 : 0;
      const clamp = refund > 0 && n % 5 === 0 ? 'pool_depleted' : null;
      mine.push({
        call_id: `${PREFIXES[n % PREFIXES.length]}-0000-7000-${n % 2 ? 'a' : '8'}000-${String(1000 - n).padStart(12, '0')}`,
        key_id: `key_${n % 3}`,
        endpoint_id: endpoint,
        method: 'POST',
        status: 200,
        outcome: kind,
        latency_ms: 5,
        started_at: T0 + n,
        gateway_id: 'gw',
        reserved: null,
        instance: null,
        uncovered: 0,
        received_at: T0 + Math.floor(n / 7),
        settled_batch: id,
        premium: kind === 'ok' ? 150 : 0,
        refund: clamp ? 0 : refund,
        refund_owed: refund,
        clamp,
      });
    }
    const sum = (f: (r: Row) => number) => mine.reduce((a, r) => a + f(r), 0);
    batches.push({
      id,
      endpoint_id: endpoint,
      created_at: T0 + 60_000 + id,
      calls: size,
      premiums: sum((r) => r.premium),
      treasury_fees: 0,
      refunds: sum((r) => r.refund),
      refunds_owed: sum((r) => r.refund_owed),
      clamped_calls: sum((r) => (r.clamp ? 1 : 0)),
    });
    calls.push(...mine);
  });
  return { batches, calls };
}

const BATCH_COLUMNS = ['id', 'endpoint_id', 'created_at', 'calls', 'premiums', 'treasury_fees', 'refunds', 'refunds_owed', 'clamped_calls'];
const SETTLED_COLUMNS = [
  'call_id',
  'batch_id',
  'endpoint_id',
  'key_id',
  'outcome',
  'started_at',
  'received_at',
  'premium',
  'refund',
  'refund_owed',
  'clamp',
];
/** The rows of `settledRows`' calls, each in the outcome records and in the settled calls. */
const settledCalls = (calls: readonly { settled_batch: number }[]) => calls.map((c) => ({ ...c, batch_id: c.settled_batch }));

async function pgDatabase(t: Test, url: string, secret: Buffer): Promise<{ pool: Pool; conn: PgConn }> {
  const pool = new Pool({ connectionString: url, types: PG_TYPES, max: 4 });
  t.teardown(() => pool.end());
  await migratePg(pool);
  await pool.query(`INSERT INTO public_secret (id, secret) VALUES (1, $1)`, [secret]);
  const { batches, calls } = settledRows();
  const insert = async (table: string, columns: string[], rows: object[]) => {
    for (const row of rows) {
      const values = columns.map((c) => (row as Record<string, unknown>)[c]);
      await pool.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, values);
    }
  };
  await insert('settlement_batches', BATCH_COLUMNS, batches);
  await insert('outcome_records', RECORD_COLUMNS, calls);
  await insert('settled_calls', SETTLED_COLUMNS, settledCalls(calls));
  return { pool, conn: new PgConn(pool) };
}

function sqliteDatabase(secret: Buffer): Db {
  const db = openDatabase(':memory:');
  db.prepare(`INSERT OR REPLACE INTO public_secret (id, secret) VALUES (1, ?)`).run(secret);
  const { batches, calls } = settledRows();
  const insert = (table: string, columns: string[], rows: object[]) => {
    const stmt = db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`);
    for (const row of rows) stmt.run(row);
  };
  insert('settlement_batches', BATCH_COLUMNS, batches);
  insert('outcome_records', RECORD_COLUMNS, calls);
  insert('settled_calls', SETTLED_COLUMNS, settledCalls(calls));
  return db;
}

t.test('the same rows, the same key: PostgreSQL signs the receipts SQLite signs, and both audits agree', async (t) => {
  const url = await withPostgres(t);
  if (url === null) return;
  const secret = randomBytes(32);
  const ids = new OpaqueIds(secret);
  const signer = ReceiptSigner.generate();
  const options = (): ReceiptsOptions => ({
    signer,
    providerId: (e) => ids.provider(e),
    rotateKey: () => ReceiptSigner.generate(),
    backfillMarker: null,
  });
  const { conn } = await pgDatabase(t, url, secret);
  const pg = new SqlReceiptsTable(conn, new ReceiptMaker(options()));
  const db = sqliteDatabase(secret);
  const liteConn = new SqliteConn(db, null);
  const lite = new SqlReceiptsTable(liteConn, new ReceiptMaker(options()));
  t.teardown(() => {
    pg.core.close();
    lite.core.close();
    db.close();
  });

  t.same(await pg.missing(), await lite.missing(), 'the same batches lack receipts');
  t.equal(await pg.open(T0), SIZES.length, 'the backfill signs every batch');
  t.equal(await lite.open(T0), SIZES.length);
  t.equal(await pg.open(T0), 0, 'once: the database records it');
  t.equal(await pg.missing(), null);

  const receipts = await pg.page(0, 100);
  t.same(receipts, await lite.page(0, 100), 'byte-identical receipts: same leaves, same order, same signatures');
  t.same(await pg.jwks(), await lite.jwks());
  t.same(await pg.head(), await lite.head());
  t.equal(await pg.count(), SIZES.length);

  const chain = new ChainVerifier(new ReceiptKeyring(await pg.jwks()));
  t.same(
    receipts.map((r) => chain.push(r)),
    receipts.map(() => null),
    'the chain verifies',
  );
  const callIds = (
    await conn.tx(
      (c) => c.all<{ call_id: string }>(sql(`SELECT call_id FROM outcomes ORDER BY settled_batch, received_at, call_id`)),
      'read',
    )
  ).map((r) => r.call_id);
  let proved = 0;
  const differ: string[] = [];
  for (const callId of callIds) {
    const found = await pg.proof(callId);
    if (!isDeepStrictEqual(found, await lite.proof(callId))) differ.push(callId);
    if (found.state === 'settled' && verifyCallProof(found.proof, await pg.jwks(), callId).ok) proved++;
  }
  t.same(differ, [], 'every proof is the one SQLite gives');
  t.equal(proved, callIds.length, 'every call proves its leaf');
  t.same(await pg.proof('nope'), { state: 'unknown' });

  const verdicts = async (c: Conn) => {
    const out: (string | null)[] = [];
    for (const size of [1, 2, 7, 64, 1000]) {
      out.push(await receiptChainViolation(c, size), await receiptRootViolation(c, size));
    }
    return out;
  };
  t.same(await verdicts(conn), Array(10).fill(null), 'the audit passes at every page size');
  t.same(await verdicts(liteConn), Array(10).fill(null), 'on SQLite too');

  // Two calls of a batch rewritten: only the root shows it. The last batch first (its calls end
  // the last page), then batch 4 (130 calls over several pages), which is then the first named.
  const rewrite = (batch: number) =>
    `UPDATE settled_calls SET outcome = CASE outcome WHEN 'ok' THEN 'client_error' ELSE 'ok' END,
       premium = CASE premium WHEN 150 THEN 0 ELSE 150 END
     WHERE call_id IN (SELECT call_id FROM settled_calls WHERE batch_id = ${batch} AND outcome IN ('ok', 'client_error')
                       ORDER BY received_at, call_id LIMIT 2)`;
  for (const [batch, calls] of [
    [6, 7],
    [4, 130],
  ] as const) {
    await conn.run(sql(rewrite(batch)));
    db.exec(rewrite(batch));
    const rootProblem = await receiptRootViolation(liteConn);
    t.match(rootProblem, new RegExp(`^batch ${batch}: its receipt's root [0-9a-f]{64} is not the root of its ${calls} calls`));
    const named = [null, rootProblem, null, rootProblem, null, rootProblem, null, rootProblem, null, rootProblem];
    t.same(await verdicts(conn), named, `batch ${batch} named at every page size`);
    t.same(await verdicts(liteConn), named, `batch ${batch} named at every page size on SQLite`);
  }

  // A receipt deleted: append refuses to grow past the gap, reissue fills it.
  const drop = `DELETE FROM receipts WHERE batch = 5`;
  await conn.run(sql(drop));
  db.exec(drop);
  t.equal(await receiptChainViolation(conn, 2), 'batch 5 has no receipt');
  t.equal(await receiptChainViolation(liteConn, 2), 'batch 5 has no receipt');
  t.same(await pg.missing(), { batch: 5, count: 1 });
  // And the newest one: the chain's head is now batch 4.
  await conn.run(sql(`DELETE FROM receipts WHERE batch = 6`));
  const extra = `INSERT INTO settlement_batches (id, endpoint_id, created_at, calls, premiums, treasury_fees, refunds, refunds_owed, clamped_calls)
                 VALUES (7, 'ep-a', ${T0 + 70_000}, 1, 0, 0, 0, 0, 0)`;
  await conn.run(sql(extra));
  const tree = pg.core.startTree([
    pg.core.leaf(7, pg.core.provider('ep-a'), { call_id: 'x', outcome: 'ok', premium: 0, refund: 0, clamp: null }),
  ]);
  const refused = await pg
    .append({ id: 7, endpoint_id: 'ep-a', created_at: T0 + 70_000, refunds: 0, premiums: 0 }, tree, 1)
    .catch((e: unknown) => e);
  t.type(refused, MissingReceiptError);
  t.equal((refused as MissingReceiptError).batch, 5);
  await t.rejects(pg.reissue(4), { name: 'ReissueError', reason: 'has_receipt' });
  await t.rejects(pg.reissue(99), { name: 'ReissueError', reason: 'no_batch', message: 'batch 99 does not exist' });
  await t.rejects(pg.reissue(6), {
    name: 'ReissueError',
    reason: 'earlier_missing',
    message: 'batch 5 has no receipt either; reissue it first',
  });
  const five = await pg.reissue(5);
  t.same(five, receipts[4], 'the same rows and key sign the lost receipt again, byte for byte');
  const six = await pg.reissue(6);
  t.match(six, { batch: 6, prev: receiptHash(five), kid: receipts[5]!.kid }, 'chained to the one before');
  t.not(six.root, receipts[5]!.root, 'over its rewritten rows: another root');
  const seventh = await pg.append({ id: 7, endpoint_id: 'ep-a', created_at: T0 + 70_000, refunds: 0, premiums: 0 }, tree, 1);
  t.equal(seventh.batch, 7, 'appended after the gap closed');
  t.equal(await pg.count(), 7);
});

t.test('rotation on PostgreSQL: prepared, published in the caller transaction, then signing', async (t) => {
  const url = await withPostgres(t);
  if (url === null) return;
  const secret = randomBytes(32);
  const ids = new OpaqueIds(secret);
  const { conn } = await pgDatabase(t, url, secret);
  const first = ReceiptSigner.generate();
  const table = new SqlReceiptsTable(
    conn,
    new ReceiptMaker({
      signer: first,
      providerId: (e) => ids.provider(e),
      rotateKey: () => ReceiptSigner.generate(),
      backfillMarker: null,
    }),
  );
  t.teardown(() => table.core.close());
  t.equal(await table.open(T0), SIZES.length, 'the key is published, then the backfill signs');
  t.equal(await table.currentKid(), first.kid);
  t.same(
    (await table.jwks()).keys.map((k) => k.kid),
    [first.kid],
    'the key is published on open',
  );
  const rotation = await table.prepareRotation();
  t.same(rotation.previous_kid, first.kid);
  await t.rejects(table.publishPrepared('other', T0 + 1), /no signing key other is prepared/);
  await conn.tx((c) => table.on(c).publishPrepared(rotation.kid, T0 + 1), 'serial');
  t.equal(await table.currentKid(), first.kid, 'published, not signing yet');
  await table.activatePrepared(rotation.kid);
  t.equal(await table.currentKid(), rotation.kid);
  t.same(
    (await table.jwks()).keys.map((k) => k.kid),
    [rotation.kid, first.kid],
    'the current key first',
  );
  await conn.run(sql(`DELETE FROM receipts WHERE batch = ${SIZES.length}`));
  t.equal((await table.reissue(SIZES.length)).kid, rotation.kid, 'signed by the new key');
});
