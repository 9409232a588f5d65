/**
 * Settlement receipts (migration 9, docs/design.md §11): one signed receipt per settlement batch,
 * chained across all endpoints in batch order, and the public keys that signed them.
 *
 * - `append` runs inside the settler's batch transaction (`settlement.ts`), so a batch and
 *   its receipt commit together or not at all: a crash can leave neither a batch without
 *   its receipt nor a gap in the chain.
 * - `backfillOnce` gives every batch that has none (settled before migration 9) its receipt,
 *   in batch order, in one transaction; the store runs it on open, before anything else. It
 *   runs ONCE per install: the database (`meta.receipts_backfilled`, migration 14) and the data
 *   dir (`backfill-marker.ts`) record that it ran, and either record stops it. From
 *   then on a settled batch without a receipt is an integrity failure (`missing`): the settler
 *   halts on it, `append` refuses to extend the chain past it, and only an operator re-signs it
 *   (`reissue`, audited and announced in the public changelog).
 * - A batch's leaves are its calls in settlement order (received_at, call_id): the order the
 *   settler selected them in, kept by the `settled_calls_by_batch` index, so `leaf_index` needs no
 *   column (it is the count of the batch's calls before it in that order). With each receipt
 *   are stored the roots of the batch's runs of 64 leaves (migration 10, `protocol/receipt-tree.ts`),
 *   so a proof reads and hashes only its call's run, whatever the batch size.
 *
 * The signer, the hasher and every step between statements (leaves, signing, the JWKS order,
 * proofs) are `receipts-core.ts`, shared with PostgreSQL's table (`pg/receipts.ts`): only the
 * SQL is here.
 */
import type { Db } from './db';
import { canonicalCallId } from '../../protocol/outcome';
import type { Checkpoint, Receipt, ReceiptJwks, ReceiptLeaf } from '../../protocol/receipts';
import { SUBTREE_LEAVES } from '../../protocol/receipt-tree';
import type { PendingTree } from './tree-hasher';
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
} from './receipts-core';

export {
  BACKFILLED_META,
  MissingReceiptError,
  ReceiptsCore,
  ReissueError,
  leafOf,
  type LeafRow,
  type ProofLookup,
  type ReceiptBatch,
  type ReceiptsOptions,
} from './receipts-core';

const COLUMNS = 'batch, v, prev, root, tree_size, refunds, premiums, settled_at, kid, sig';

export class ReceiptsTable {
  readonly enabled: boolean;
  /** The signer, the hasher and the steps between statements (shared with PostgreSQL's table). */
  readonly core: ReceiptsCore;
  private readonly insertStmt;
  private readonly headStmt;
  private readonly getStmt;
  private readonly pageStmt;
  private readonly countStmt;
  private readonly addKeyStmt;
  private readonly keysStmt;
  private readonly callStmt;
  private readonly leavesStmt;
  private readonly subtreesStmt;
  private readonly indexStmt;
  private readonly runStmt;
  private readonly batchStmt;
  private readonly unreceiptedStmt;
  private readonly missingStmt;
  private readonly beforeStmt;
  private readonly backfilledStmt;
  private readonly markBackfilledStmt;
  private readonly backfillTx;

  constructor(db: Db, opts: ReceiptsOptions, now: number) {
    this.core = new ReceiptsCore(opts);
    this.enabled = this.core.enabled;
    this.insertStmt = db.prepare(
      `INSERT INTO receipts (${COLUMNS}, subtrees) VALUES (@batch, @v, @prev, @root, @tree_size, @refunds, @premiums, @settled_at, @kid, @sig, @subtrees)`,
    );
    this.headStmt = db.prepare(`SELECT ${COLUMNS} FROM receipts ORDER BY batch DESC LIMIT 1`);
    this.getStmt = db.prepare(`SELECT ${COLUMNS} FROM receipts WHERE batch = ?`);
    this.pageStmt = db.prepare(`SELECT ${COLUMNS} FROM receipts WHERE batch > ? ORDER BY batch LIMIT ?`);
    this.countStmt = db.prepare(`SELECT count(*) FROM receipts`).pluck();
    this.addKeyStmt = db.prepare(`INSERT OR IGNORE INTO receipt_keys (kid, x, created_at) VALUES (?, ?, ?)`);
    this.keysStmt = db.prepare(`SELECT kid, x FROM receipt_keys ORDER BY created_at DESC, kid`);
    this.callStmt = db.prepare(`SELECT settled_batch, received_at FROM outcomes WHERE call_id = ?`);
    this.leavesStmt = db.prepare(
      `SELECT call_id, outcome, premium, refund, clamp FROM settled_calls WHERE batch_id = ? ORDER BY received_at, call_id`,
    );
    this.subtreesStmt = db.prepare(`SELECT subtrees FROM receipts WHERE batch = ?`).pluck();
    this.indexStmt = db.prepare(`SELECT count(*) FROM settled_calls WHERE batch_id = ? AND (received_at, call_id) < (?, ?)`).pluck();
    this.runStmt = db.prepare(
      `SELECT call_id, outcome, premium, refund, clamp FROM settled_calls WHERE batch_id = ? ORDER BY received_at, call_id LIMIT ${SUBTREE_LEAVES} OFFSET ?`,
    );
    this.batchStmt = db.prepare(`SELECT id, endpoint_id, created_at, refunds, premiums FROM settlement_batches WHERE id = ?`);
    this.unreceiptedStmt = db.prepare(`SELECT id FROM settlement_batches WHERE id > ? AND id <= ? ORDER BY id`).pluck();
    // Every batch without a receipt, read once on open and after a reissue (one pass over the batches).
    this.missingStmt = db.prepare(
      `SELECT min(id) AS batch, count(*) AS count FROM settlement_batches b WHERE id < ?
         AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.batch = b.id)`,
    );
    this.beforeStmt = db.prepare(`SELECT ${COLUMNS} FROM receipts WHERE batch < ? ORDER BY batch DESC LIMIT 1`);
    this.backfilledStmt = db.prepare(`SELECT 1 FROM meta WHERE name = '${BACKFILLED_META}'`).pluck();
    this.markBackfilledStmt = db.prepare(`INSERT INTO meta (name, value) VALUES ('${BACKFILLED_META}', 1) ON CONFLICT (name) DO NOTHING`);
    this.backfillTx = db.transaction(() => {
      const written = this.fillAfterHead();
      this.markBackfilledStmt.run();
      return written;
    });
    // The file's key is published before it signs anything.
    const key = this.core.signing;
    this.addKeyStmt.run(key.kid, key.x, now);
  }

  /** The kid that signs new receipts. */
  get kid(): string {
    return this.core.kid;
  }

  /** The kid that signs new receipts (`kid`, as a method callers across the store's seam can call). */
  currentKid(): string {
    return this.core.kid;
  }

  // -------------------------------------------------------------------------------------
  // Writing (inside a transaction)

  /** The opaque provider id that a batch's leaves name. */
  provider(endpointId: string): string {
    return this.core.provider(endpointId);
  }

  /**
   * The canonical leaf of one settled call of `batch`. `settlement.ts` makes one for every call
   * of a batch, in leaf order, with the amounts it writes on the call's row.
   */
  leaf(batch: number, provider: string, call: LeafRow): string {
    return this.core.leaf(batch, provider, call);
  }

  /** Start computing the tree of a batch's canonical leaves (on the hasher's thread). */
  startTree(leaves: readonly string[]): PendingTree {
    return this.core.startTree(leaves);
  }

  /**
   * Sign and store the receipt of `batch`, whose `treeSize` leaves make the tree `tree`. Must
   * run in the batch's transaction. A batch between the newest receipt and this one without a
   * receipt throws `MissingReceiptError` (the transaction, and the batch, roll back): the chain
   * never grows past a gap, and nothing but `reissue` signs an older batch.
   */
  append(batch: ReceiptBatch, tree: PendingTree, treeSize: number): Receipt {
    const head = this.headStmt.get() as Receipt | undefined;
    const gap = this.unreceiptedStmt.get(head?.batch ?? 0, batch.id - 1) as number | undefined;
    if (gap !== undefined) throw new MissingReceiptError(gap);
    return this.store(this.core.sign(batch, tree.result(), treeSize, head));
  }

  /**
   * The receipts backfill, once per install: unless the database or the data dir records that
   * it ran, receipts for every batch after the newest receipt, in batch order, in ONE
   * transaction that also records it in the database; then the data dir's record. A record
   * missing from one place is written again from the other. Returns how many receipts it wrote.
   */
  backfillOnce(now: number): number {
    const plan = this.core.backfillPlan(this.backfilledStmt.get() !== undefined);
    let written = 0;
    if (plan.fill) written = this.backfillTx.immediate();
    else if (plan.markDatabase) this.markBackfilledStmt.run();
    if (plan.markDataDir) this.core.markDataDir(now, written);
    return written;
  }

  /** The oldest settled batch without a receipt and how many lack one, or null (always null with receipts off). */
  missing(): { batch: number; count: number } | null {
    if (!this.enabled) return null;
    return ReceiptsCore.missing(this.missingStmt.get(Number.MAX_SAFE_INTEGER) as { batch: number | null; count: number });
  }

  /**
   * Sign `batchId`, a settled batch without a receipt, again: its leaves from its calls' rows as
   * they are now, chained to the receipt of the batch before it, by the current key. Must run
   * in the caller's audited transaction. Refuses (`ReissueError`) a batch that does not exist,
   * one that has its receipt, and one with an earlier batch still lacking its receipt (the
   * chain is re-signed in batch order). When later batches have receipts, the new receipt links
   * to them only if it is byte for byte the one that was lost (same rows, same key).
   */
  reissue(batchId: number): Receipt {
    const batch = this.batchStmt.get(batchId) as ReceiptBatch | undefined;
    if (batch === undefined) throw ReissueError.noBatch(batchId);
    if (this.getStmt.get(batchId) !== undefined) throw ReissueError.hasReceipt(batchId);
    const earlier = this.missingStmt.get(batchId) as { batch: number | null };
    if (earlier.batch !== null) throw ReissueError.earlierMissing(earlier.batch);
    return this.signFromRows(batch, this.beforeStmt.get(batchId) as Receipt | undefined);
  }

  /** Write a new signing key to the data dir; it signs once published and activated (`ReceiptsCore.prepareRotation`). */
  prepareRotation(): { kid: string; previous_kid: string } {
    return this.core.prepareRotation();
  }

  /** Publish the prepared key's public half (inside the caller's transaction). */
  publishPrepared(kid: string, now: number): void {
    const key = this.core.prepared(kid);
    this.addKeyStmt.run(key.kid, key.x, now);
  }

  /** The published, prepared key signs from the next batch on. */
  activatePrepared(kid: string): void {
    this.core.activatePrepared(kid);
  }

  /** Receipts for the batches after the newest receipt, in batch order; how many. */
  private fillAfterHead(): number {
    let head = this.headStmt.get() as Receipt | undefined;
    let written = 0;
    for (const id of this.unreceiptedStmt.all(head?.batch ?? 0, Number.MAX_SAFE_INTEGER) as number[]) {
      head = this.signFromRows(this.batchStmt.get(id) as ReceiptBatch, head);
      written++;
    }
    return written;
  }

  /** Sign `batch` from its calls' rows as they are now, chained to `prev`. */
  private signFromRows(batch: ReceiptBatch, prev: Receipt | undefined): Receipt {
    return this.store(this.core.signRows(batch, this.leavesStmt.all(batch.id) as LeafRow[], prev));
  }

  private store(signed: SignedReceipt): Receipt {
    this.insertStmt.run({ ...signed.receipt, subtrees: signed.subtrees });
    return signed.receipt;
  }

  /** Stop the hasher's worker thread. */
  close(): void {
    this.core.close();
  }

  // -------------------------------------------------------------------------------------
  // Reading

  /** The newest receipt, or null. */
  head(): Receipt | null {
    return (this.headStmt.get() as Receipt | undefined) ?? null;
  }

  /**
   * The checkpoint of the chain whose newest receipt is `head` (read with `head()`), signed by the
   * current key. The caller signs only over a chain it verified (`receipts/chain-guard.ts`).
   */
  checkpoint(head: Receipt): Checkpoint {
    return this.core.checkpoint(head);
  }

  get(batch: number): Receipt | null {
    return (this.getStmt.get(batch) as Receipt | undefined) ?? null;
  }

  /** Up to `limit` receipts after batch `after`, ascending. */
  page(after: number, limit: number): Receipt[] {
    return this.pageStmt.all(after, limit) as Receipt[];
  }

  count(): number {
    return this.countStmt.get() as number;
  }

  /** Every key that signed or signs receipts, the current one first (RFC 8037 JWKs). */
  jwks(): ReceiptJwks {
    return this.core.jwks(this.keysStmt.all() as ReceiptKeyRow[]);
  }

  /** The leaves of one batch, in leaf order, as published (from the calls' rows). */
  leaves(batchId: number): ReceiptLeaf[] {
    const batch = this.batchStmt.get(batchId) as ReceiptBatch | undefined;
    if (batch === undefined) return [];
    return this.core.leaves(batchId, batch.endpoint_id, this.leavesStmt.all(batchId) as LeafRow[]);
  }

  /**
   * The inclusion proof of a call (by the gateway's call id), or why there is none. With the
   * batch's stored run roots (checked against the receipt's root) it reads only the call's run
   * of 64 rows; without them, or when they disagree with the rows, it hashes the whole batch. Either way the leaf and path come
   * from the rows as they are now, so a rewritten row yields a proof that does not verify.
   */
  proof(id: string): ProofLookup {
    const callId = canonicalCallId(id);
    if (callId === null) return { state: 'unknown' };
    const call = this.callStmt.get(callId) as { settled_batch: number | null; received_at: number } | undefined;
    if (call === undefined) return { state: 'unknown' };
    if (call.settled_batch === null) return { state: 'unsettled' };
    const batch = call.settled_batch;
    const receipt = this.get(batch);
    if (receipt === null) return { state: 'unreceipted', batch };
    const found = this.proofFromRun(batch, callId, call.received_at, receipt.root) ?? ReceiptsCore.proofInBatch(this.leaves(batch), callId);
    return { state: 'settled', proof: { ...found, tree_size: receipt.tree_size, receipt } };
  }

  private proofFromRun(batch: number, callId: string, receivedAt: number, root: string): ProofPath | null {
    const runs = ReceiptsCore.runs(this.subtreesStmt.get(batch) as Buffer | null | undefined, root);
    if (runs === null) return null;
    const index = this.indexStmt.get(batch, receivedAt, callId) as number;
    const endpointId = (this.batchStmt.get(batch) as ReceiptBatch).endpoint_id;
    const rows = this.runStmt.all(batch, ReceiptsCore.runOf(index).offset) as LeafRow[];
    return this.core.proofInRun(batch, endpointId, callId, index, runs, rows);
  }
}
