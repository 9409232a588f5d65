/**
 * Settlement receipts on PostgreSQL: the same chain, backfill, reissue and proofs as SQLite's
 * `../receipts.ts` (its header says what they guarantee), by the same code: the signer, the
 * hasher and every step between statements are `../receipts-core.ts`; only the SQL is here.
 *
 * - `PgReceiptsState` is what outlives one connection (the core: current and prepared signing
 *   keys, the tree hasher's worker, provider ids, the data dir's backfill record), opened once
 *   per store (`openReceiptsState`, which publishes the data dir's key before it signs
 *   anything); a `PgReceiptsTable` on any connection is a cheap view of it.
 * - `append` runs in the settlement transaction, which holds the store's writer lock, so the
 *   head it chains to cannot move under it; `receipts.batch` is the primary key, so no two
 *   receipts ever claim one batch. `reissue` runs in `mutate` (serial too). Called outside a
 *   transaction, both take the writer lock themselves.
 * - `backfillOnce` runs in one `serial` transaction, and reads the database's record of the
 *   backfill again under the lock: of several processes opening one database at once, one
 *   signs and the others find it done.
 * - `proof` reads in one `REPEATABLE READ` transaction: the call, its receipt, its run and the
 *   run roots of one state, as SQLite's one synchronous call reads them, in two statements.
 */
import type { Hash32 } from '../../../protocol/merkle';
import { canonicalCallId } from '../../../protocol/outcome';
import type { Checkpoint, Receipt, ReceiptJwks, ReceiptLeaf } from '../../../protocol/receipts';
import { SUBTREE_LEAVES } from '../../../protocol/receipt-tree';
import type { PendingTree } from '../tree-hasher';
import type { ReceiptsTable } from '../receipts';
import {
  BACKFILLED_META,
  MissingReceiptError,
  ReceiptsCore,
  ReissueError,
  type LeafRow,
  type ProofLookup,
  type ProofPath,
  type ReceiptBatch,
  type ReceiptKeyRow,
  type ReceiptsOptions,
  type SignedReceipt,
} from '../receipts-core';
import { settled, type Async } from '../seam';
import { sql, type PgConn } from './conn';

const COLUMNS = 'batch, v, prev, root, tree_size, refunds, premiums, settled_at, kid, sig';
const LEAF_COLUMNS = 'call_id, outcome, premium, refund, clamp';

const Q = {
  insert: sql(
    `INSERT INTO receipts (${COLUMNS}, subtrees) VALUES (@batch, @v, @prev, @root, @tree_size, @refunds, @premiums, @settled_at, @kid, @sig, @subtrees)`,
  ),
  head: sql(`SELECT ${COLUMNS} FROM receipts ORDER BY batch DESC LIMIT 1`),
  get: sql(`SELECT ${COLUMNS} FROM receipts WHERE batch = ?`),
  page: sql(`SELECT ${COLUMNS} FROM receipts WHERE batch > ? ORDER BY batch LIMIT ?`),
  count: sql(`SELECT count(*) FROM receipts`),
  addKey: sql(`INSERT INTO receipt_keys (kid, x, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`),
  keys: sql(`SELECT kid, x FROM receipt_keys ORDER BY created_at DESC, kid`),
  // A call with what its proof needs: its batch's receipt (NULLs without one), run roots and
  // endpoint, and (with run roots) its leaf index: the count of the batch's calls before it.
  proofOf: sql(
    `SELECT s.batch_id AS settled_batch, r.batch, r.v, r.prev, r.root, r.tree_size, r.refunds, r.premiums, r.settled_at, r.kid, r.sig,
            r.subtrees, b.endpoint_id,
            CASE WHEN r.subtrees IS NULL THEN NULL ELSE (
              SELECT count(*) FROM settled_calls i
              WHERE i.batch_id = s.batch_id AND (i.received_at, i.call_id) < (s.received_at, s.call_id)) END AS leaf_index
     FROM outcome_records o LEFT JOIN settled_calls s ON s.call_id = o.call_id
       LEFT JOIN receipts r ON r.batch = s.batch_id LEFT JOIN settlement_batches b ON b.id = s.batch_id
     WHERE o.call_id = ?`,
  ),
  leaves: sql(`SELECT ${LEAF_COLUMNS} FROM settled_calls WHERE batch_id = ? ORDER BY received_at, call_id`),
  run: sql(`SELECT ${LEAF_COLUMNS} FROM settled_calls WHERE batch_id = ? ORDER BY received_at, call_id LIMIT ${SUBTREE_LEAVES} OFFSET ?`),
  batch: sql(`SELECT id, endpoint_id, created_at, refunds, premiums FROM settlement_batches WHERE id = ?`),
  /** The first batch after the head up to the one being appended: a gap. */
  gap: sql(`SELECT id FROM settlement_batches WHERE id > ? AND id <= ? ORDER BY id LIMIT 1`),
  after: sql(`SELECT id FROM settlement_batches WHERE id > ? ORDER BY id`),
  missing: sql(
    `SELECT min(id) AS batch, count(*) AS count FROM settlement_batches b WHERE id < ?
       AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.batch = b.id)`,
  ),
  before: sql(`SELECT ${COLUMNS} FROM receipts WHERE batch < ? ORDER BY batch DESC LIMIT 1`),
  backfilled: sql(`SELECT 1 FROM meta WHERE name = '${BACKFILLED_META}'`),
  markBackfilled: sql(`INSERT INTO meta (name, value) VALUES ('${BACKFILLED_META}', 1) ON CONFLICT (name) DO NOTHING`),
};

/** Run `fn` in the caller's transaction, or else in one of its own under the writer lock. */
const serial = <T>(conn: PgConn, fn: (conn: PgConn) => Promise<T>): Promise<T> => (conn.inTransaction ? fn(conn) : conn.tx(fn, 'serial'));

/** A settling transaction's receipts, in batch order (`PgReceiptsTable.chain`). */
export interface ReceiptChain {
  /** Sign the receipt of `batch` (the batch after the last one signed), waiting for its tree. */
  sign(batch: ReceiptBatch, tree: PendingTree, treeSize: number): SignedReceipt;
}

/** What the receipts of one PostgreSQL store keep across connections. */
export class PgReceiptsState {
  constructor(readonly core: ReceiptsCore) {}

  get enabled(): boolean {
    return this.core.enabled;
  }

  /** The receipts backfill, once per install (`PgReceiptsTable.backfillOnce`), on `conn`. */
  backfillOnce(conn: PgConn, now: number): Promise<number> {
    return new PgReceiptsTable(conn, this).backfillOnce(now);
  }

  /** Stop the hasher (its worker thread, if it has one). */
  close(): Promise<void> {
    this.core.close();
    return Promise.resolve();
  }
}

/** The receipts state of a store on `conn`'s database: the data dir's key is published before it signs anything. */
export async function openReceiptsState(conn: PgConn, opts: ReceiptsOptions, now: number): Promise<PgReceiptsState> {
  const core = new ReceiptsCore(opts);
  try {
    const key = core.signing;
    await conn.run(Q.addKey, [key.kid, key.x, now]);
  } catch (err) {
    core.close();
    throw err;
  }
  return new PgReceiptsState(core);
}

export class PgReceiptsTable implements Async<ReceiptsTable> {
  readonly enabled: boolean;
  /**
   * The synchronous steps (`provider`, `leaf`, `startTree`), for the settlement table to build a
   * batch's leaves without a promise per call; the methods of the same names answer promises.
   */
  readonly core: ReceiptsCore;

  constructor(
    private readonly conn: PgConn,
    private readonly state: PgReceiptsState,
  ) {
    this.core = state.core;
    this.enabled = state.core.enabled;
  }

  /** This table on `conn` (another transaction's connection), sharing this store's state. */
  on(conn: PgConn): PgReceiptsTable {
    return new PgReceiptsTable(conn, this.state);
  }

  /** The kid that signs new receipts. */
  currentKid(): Promise<string> {
    return settled(() => this.core.kid);
  }

  // -------------------------------------------------------------------------------------
  // Writing (inside a transaction)

  /** The opaque provider id that a batch's leaves name. */
  provider(endpointId: string): Promise<string> {
    return settled(() => this.core.provider(endpointId));
  }

  /** The canonical leaf of one settled call of `batch` (`ReceiptsCore.leaf`). */
  leaf(batch: number, provider: string, call: LeafRow): Promise<string> {
    return settled(() => this.core.leaf(batch, provider, call));
  }

  /** Start computing the tree of a batch's canonical leaves (`ReceiptsCore.startTree`). */
  startTree(leaves: readonly string[]): Promise<PendingTree> {
    return settled(() => this.core.startTree(leaves));
  }

  /**
   * Sign and store the receipt of `batch`, whose `treeSize` leaves make the tree `tree`, in the
   * batch's transaction. A batch between the newest receipt and this one without a receipt
   * throws `MissingReceiptError` (the transaction, and the batch, roll back).
   */
  append(batch: ReceiptBatch, tree: PendingTree, treeSize: number): Promise<Receipt> {
    return serial(this.conn, async (c) => store(c, (await this.on(c).chain(batch.id)).sign(batch, tree, treeSize)));
  }

  /**
   * The receipts of one settling transaction's batches, numbered `firstBatch`, `firstBatch + 1`, …
   * (in the transaction that holds the writer lock): the head they chain to, and the check that
   * every batch between it and `firstBatch` has a receipt (else `MissingReceiptError`), are read
   * once here (`append` is a chain of one). Each `sign` of the chain then signs at once,
   * chained to the receipt before it; the settlement's statement for the batch stores it.
   */
  async chain(firstBatch: number): Promise<ReceiptChain> {
    let prev = await this.conn.get<Receipt>(Q.head);
    const gap = await this.conn.value<number>(Q.gap, [prev?.batch ?? 0, firstBatch - 1]);
    if (gap !== undefined) throw new MissingReceiptError(gap);
    return {
      sign: (batch, tree, treeSize) => {
        const signed = this.core.sign(batch, tree.result(), treeSize, prev);
        prev = signed.receipt;
        return signed;
      },
    };
  }

  /**
   * The receipts backfill, once per install (as SQLite's `backfillOnce`): unless the database or
   * the data dir records that it ran, receipts for every batch after the newest receipt, in
   * batch order, in ONE serial transaction that also records it in the database; then the data
   * dir's record. Returns how many receipts it wrote.
   */
  async backfillOnce(now: number): Promise<number> {
    const plan = this.core.backfillPlan((await this.conn.value(Q.backfilled)) !== undefined);
    let written = 0;
    if (plan.fill) {
      written = await serial(this.conn, async (c) => {
        // Another process may have run it since the read above: the lock orders us after it.
        if ((await c.value(Q.backfilled)) !== undefined) return 0;
        const n = await this.fillAfterHead(c);
        await c.run(Q.markBackfilled);
        return n;
      });
    } else if (plan.markDatabase) {
      await this.conn.run(Q.markBackfilled);
    }
    if (plan.markDataDir) this.core.markDataDir(now, written);
    return written;
  }

  /** The oldest settled batch without a receipt and how many lack one, or null (always null with receipts off). */
  async missing(): Promise<{ batch: number; count: number } | null> {
    if (!this.enabled) return null;
    return ReceiptsCore.missing((await this.conn.get<{ batch: number | null; count: number }>(Q.missing, [Number.MAX_SAFE_INTEGER]))!);
  }

  /**
   * Sign `batchId`, a settled batch without a receipt, again (as SQLite's `reissue`): in the
   * caller's audited transaction. Refuses (`ReissueError`) a batch that does not exist, one that
   * has its receipt, and one with an earlier batch still lacking its receipt.
   */
  reissue(batchId: number): Promise<Receipt> {
    return serial(this.conn, async (c) => {
      const batch = await c.get<ReceiptBatch>(Q.batch, [batchId]);
      if (batch === undefined) throw ReissueError.noBatch(batchId);
      if ((await c.get(Q.get, [batchId])) !== undefined) throw ReissueError.hasReceipt(batchId);
      const earlier = (await c.get<{ batch: number | null }>(Q.missing, [batchId]))!;
      if (earlier.batch !== null) throw ReissueError.earlierMissing(earlier.batch);
      return this.signFromRows(c, batch, await c.get<Receipt>(Q.before, [batchId]));
    });
  }

  /** Write a new signing key to the data dir; it signs once published and activated (`ReceiptsCore.prepareRotation`). */
  prepareRotation(): Promise<{ kid: string; previous_kid: string }> {
    return settled(() => this.core.prepareRotation());
  }

  /** Publish the prepared key's public half (inside the caller's transaction). */
  async publishPrepared(kid: string, now: number): Promise<void> {
    const key = this.core.prepared(kid);
    await this.conn.run(Q.addKey, [key.kid, key.x, now]);
  }

  /** The published, prepared key signs from the next batch on. */
  activatePrepared(kid: string): Promise<void> {
    return settled(() => this.core.activatePrepared(kid));
  }

  /** Receipts for the batches after the newest receipt, in batch order; how many. */
  private async fillAfterHead(c: PgConn): Promise<number> {
    let head = await c.get<Receipt>(Q.head);
    let written = 0;
    for (const id of await c.column<number>(Q.after, [head?.batch ?? 0])) {
      head = await this.signFromRows(c, (await c.get<ReceiptBatch>(Q.batch, [id]))!, head);
      written++;
    }
    return written;
  }

  /** Sign `batch` from its calls' rows as they are now, chained to `prev`. */
  private async signFromRows(c: PgConn, batch: ReceiptBatch, prev: Receipt | undefined): Promise<Receipt> {
    return store(c, this.core.signRows(batch, await c.all<LeafRow>(Q.leaves, [batch.id]), prev));
  }

  /** Stop the hasher (the store's: every table on it shares it). */
  close(): Promise<void> {
    return this.state.close();
  }

  // -------------------------------------------------------------------------------------
  // Reading

  /** The newest receipt, or null. */
  async head(): Promise<Receipt | null> {
    return (await this.conn.get<Receipt>(Q.head)) ?? null;
  }

  /**
   * The checkpoint of the chain whose newest receipt is `head` (read with `head()`), signed by the
   * current key. The caller signs only over a chain it verified (`receipts/chain-guard.ts`).
   */
  checkpoint(head: Receipt): Promise<Checkpoint> {
    return Promise.resolve(this.state.core.checkpoint(head));
  }

  async get(batch: number): Promise<Receipt | null> {
    return (await this.conn.get<Receipt>(Q.get, [batch])) ?? null;
  }

  /** Up to `limit` receipts after batch `after`, ascending. */
  page(after: number, limit: number): Promise<Receipt[]> {
    return this.conn.all<Receipt>(Q.page, [after, limit]);
  }

  async count(): Promise<number> {
    return (await this.conn.value<number>(Q.count))!;
  }

  /** Every key that signed or signs receipts, the current one first (RFC 8037 JWKs). */
  async jwks(): Promise<ReceiptJwks> {
    return this.core.jwks(await this.conn.all<ReceiptKeyRow>(Q.keys));
  }

  /** The leaves of one batch, in leaf order, as published (from the calls' rows). */
  leaves(batchId: number): Promise<ReceiptLeaf[]> {
    return this.conn.tx((c) => leavesOf(c, this.core, batchId), 'read');
  }

  /**
   * The inclusion proof of a call (by the gateway's call id), or why there is none (as SQLite's
   * `proof`): the call, its receipt and run roots in one statement, then its run of 64 rows (or,
   * without valid run roots, the whole batch), in one snapshot.
   */
  async proof(id: string): Promise<ProofLookup> {
    const callId = canonicalCallId(id);
    if (callId === null) return { state: 'unknown' };
    return this.conn.tx(async (c): Promise<ProofLookup> => {
      const row = await c.get<ProofRow>(Q.proofOf, [callId]);
      if (row === undefined) return { state: 'unknown' };
      const { settled_batch: batch, subtrees, endpoint_id: endpointId, leaf_index: index, ...receipt } = row;
      if (batch === null) return { state: 'unsettled' };
      if (receipt.batch === null) return { state: 'unreceipted', batch };
      const found =
        (await this.proofFromRun(c, batch, endpointId!, callId, index, ReceiptsCore.runs(subtrees, receipt.root!))) ??
        ReceiptsCore.proofInBatch(await leavesOf(c, this.core, batch), callId);
      return { state: 'settled', proof: { ...found, tree_size: receipt.tree_size!, receipt: receipt as Receipt } };
    }, 'read');
  }

  private async proofFromRun(
    c: PgConn,
    batch: number,
    endpointId: string,
    callId: string,
    index: number | null,
    runs: Hash32[] | null,
  ): Promise<ProofPath | null> {
    if (runs === null || index === null) return null;
    const rows = await c.all<LeafRow>(Q.run, [batch, ReceiptsCore.runOf(index).offset]);
    return this.core.proofInRun(batch, endpointId, callId, index, runs, rows);
  }
}

/** A call as `proof` reads it (`Q.proofOf`). */
type ProofRow = { [K in keyof Receipt]: Receipt[K] | null } & {
  settled_batch: number | null;
  subtrees: Buffer | null;
  endpoint_id: string | null;
  leaf_index: number | null;
};

async function leavesOf(c: PgConn, core: ReceiptsCore, batchId: number): Promise<ReceiptLeaf[]> {
  const batch = await c.get<ReceiptBatch>(Q.batch, [batchId]);
  if (batch === undefined) return [];
  return core.leaves(batchId, batch.endpoint_id, await c.all<LeafRow>(Q.leaves, [batchId]));
}

async function store(c: PgConn, signed: SignedReceipt): Promise<Receipt> {
  await c.run(Q.insert, { ...signed.receipt, subtrees: signed.subtrees });
  return signed.receipt;
}
