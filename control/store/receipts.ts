/**
 * Settlement receipts (migration 9, DESIGN §11): one signed receipt per settlement batch,
 * chained across all endpoints in batch order, and the public keys that signed them.
 *
 * - `append` runs inside the settler's batch transaction (`settlement.ts`), so a batch and
 *   its receipt commit together or not at all: a crash can leave neither a batch without
 *   its receipt nor a gap in the chain.
 * - `backfillOnce` gives every batch that has none (settled before migration 9) its receipt,
 *   in batch order, in one transaction; the store runs it on open, before anything else. It
 *   runs ONCE per install: the database (`meta.receipts_backfilled`, migration 14) and the data
 *   dir (`receipts/backfill-marker.ts`) record that it ran, and either record stops it. From
 *   then on a settled batch without a receipt is an integrity failure (`missing`): the settler
 *   halts on it, `append` refuses to extend the chain past it, and only an operator re-signs it
 *   (`reissue`, audited and announced in the public changelog).
 * - A batch's leaves are its calls in settlement order (received_at, call_id): the order the
 *   settler selected them in, kept by the `outcomes_by_batch` index, so `leaf_index` needs no
 *   column (it is the count of the batch's calls before it in that order). With each receipt
 *   are stored the roots of the batch's runs of 64 leaves (migration 10, `receipts/tree.ts`),
 *   so a proof reads and hashes only its call's run, whatever the batch size.
 */
import type { Db } from './db';
import { inclusionPath, leafHash, rootOf, toHex } from '../../protocol/merkle';
import type { CallProof, Receipt, ReceiptJwks, ReceiptLeaf } from '../../protocol/receipts';
import {
  GENESIS_PREV,
  RECEIPT_VERSION,
  leafCanonical,
  receiptHash,
  receiptSigningBytes,
  type UnsignedReceipt,
} from '../../protocol/receipts-verify';
import type { Clamp } from '../../protocol/settlement';
import type { BackfillMarker } from '../receipts/backfill-marker';
import type { ReceiptSigner } from '../receipts/signing-key';
import { SUBTREE_LEAVES, splitSubtrees } from '../receipts/tree';
import { TreeHasher, type PendingTree, type StoredTree } from '../receipts/tree-hasher';

/** What a receipt commits to about its batch. */
export interface ReceiptBatch {
  id: number;
  endpoint_id: string;
  /** ms */
  created_at: number;
  refunds: number;
  premiums: number;
}

/** A call of a batch, in leaf order, with its settled amounts. */
export interface LeafRow {
  call_id: string;
  outcome: ReceiptLeaf['outcome'];
  premium: number;
  refund: number;
  clamp: Clamp | null;
}

/** A call's leaf: its batch and provider, and the settled row. */
export function leafOf(batch: number, provider: string, row: LeafRow): ReceiptLeaf {
  return { batch, call_id: row.call_id, provider, outcome: row.outcome, premium: row.premium, refund: row.refund, clamp: row.clamp };
}

/** `meta` row recording that the receipts backfill ran (migration 14 sets it on installs that had receipts). */
export const BACKFILLED_META = 'receipts_backfilled';

/** A settled batch has no receipt where one must be: the settler halts on it. */
export class MissingReceiptError extends Error {
  constructor(readonly batch: number) {
    super(`batch ${batch} is settled but has no receipt`);
    this.name = 'MissingReceiptError';
  }
}

/** Why `reissue` refuses: no such batch, it has its receipt, or an earlier batch lacks one. */
export class ReissueError extends Error {
  constructor(
    readonly reason: 'no_batch' | 'has_receipt' | 'earlier_missing',
    message: string,
  ) {
    super(message);
    this.name = 'ReissueError';
  }
}

export type ProofLookup =
  { state: 'unknown' } | { state: 'unsettled' } | { state: 'unreceipted'; batch: number } | { state: 'settled'; proof: CallProof };

export interface ReceiptsOptions {
  signer: ReceiptSigner;
  /** The opaque provider id of an endpoint, as `/api/v1/providers` shows it. */
  providerId: (endpointId: string) => string;
  /** Replace the signing key (writes the key file); returns the new signer. */
  rotateKey: () => ReceiptSigner;
  /**
   * Write receipts (default). Off only for `bench:settlement`'s side-by-side baseline: a store
   * opened later with receipts on signs the batches left without one only if no backfill is
   * recorded yet (the baseline's database and data dir never had receipts on).
   */
  enabled?: boolean;
  /** Computes batch roots (on a worker thread when it can). @default a new TreeHasher */
  hasher?: TreeHasher;
  /** The data dir's record of the backfill; null for an in-memory store (the database's alone counts). */
  backfillMarker?: BackfillMarker | null;
}

const COLUMNS = 'batch, v, prev, root, tree_size, refunds, premiums, settled_at, kid, sig';

export class ReceiptsTable {
  readonly enabled: boolean;
  private signerNow: ReceiptSigner;
  /** A key written by `prepareRotation`, not signing until `activatePrepared`. */
  private pending: ReceiptSigner | null = null;
  private readonly providerId: (endpointId: string) => string;
  private readonly rotateKey: () => ReceiptSigner;
  private readonly hasher: TreeHasher;
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
  private readonly marker: BackfillMarker | null;
  private readonly backfillTx;

  constructor(db: Db, opts: ReceiptsOptions, now: number) {
    this.enabled = opts.enabled ?? true;
    this.signerNow = opts.signer;
    this.providerId = opts.providerId;
    this.rotateKey = opts.rotateKey;
    this.hasher = opts.hasher ?? new TreeHasher(this.enabled ? undefined : null);
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
      `SELECT call_id, outcome, premium, refund, clamp FROM outcomes WHERE settled_batch = ? ORDER BY received_at, call_id`,
    );
    this.subtreesStmt = db.prepare(`SELECT subtrees FROM receipts WHERE batch = ?`).pluck();
    this.indexStmt = db.prepare(`SELECT count(*) FROM outcomes WHERE settled_batch = ? AND (received_at, call_id) < (?, ?)`).pluck();
    this.runStmt = db.prepare(
      `SELECT call_id, outcome, premium, refund, clamp FROM outcomes WHERE settled_batch = ? ORDER BY received_at, call_id LIMIT ${SUBTREE_LEAVES} OFFSET ?`,
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
    this.marker = opts.backfillMarker ?? null;
    this.backfillTx = db.transaction(() => {
      const written = this.fillAfterHead();
      this.markBackfilledStmt.run();
      return written;
    });
    // The file's key is published before it signs anything.
    this.addKeyStmt.run(this.signerNow.kid, this.signerNow.x, now);
  }

  /** The kid that signs new receipts. */
  get kid(): string {
    return this.signerNow.kid;
  }

  /** The kid that signs new receipts (`kid`, as a method callers across the store's seam can call). */
  currentKid(): string {
    return this.signerNow.kid;
  }

  // -------------------------------------------------------------------------------------
  // Writing (inside a transaction)

  /** The opaque provider id that a batch's leaves name. */
  provider(endpointId: string): string {
    return this.providerId(endpointId);
  }

  /**
   * The canonical leaf of one settled call of `batch`. `settlement.ts` makes one for every call
   * of a batch, in leaf order, with the amounts it writes on the call's row.
   */
  leaf(batch: number, provider: string, call: LeafRow): string {
    return leafCanonical({
      batch,
      call_id: call.call_id,
      provider,
      outcome: call.outcome,
      premium: call.premium,
      refund: call.refund,
      clamp: call.clamp,
    });
  }

  /** Start computing the tree of a batch's canonical leaves (on the hasher's thread). */
  startTree(leaves: readonly string[]): PendingTree {
    return this.hasher.start(leaves);
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
    return this.sign(batch, tree.result(), treeSize, head);
  }

  /**
   * The receipts backfill, once per install: unless the database or the data dir records that
   * it ran, receipts for every batch after the newest receipt, in batch order, in ONE
   * transaction that also records it in the database; then the data dir's record. A record
   * missing from one place is written again from the other. Returns how many receipts it wrote.
   */
  backfillOnce(now: number): number {
    const inDb = this.backfilledStmt.get() !== undefined;
    const inDir = this.marker?.exists() ?? false;
    let written = 0;
    if (!inDb && !inDir) written = this.backfillTx.immediate();
    else if (!inDb) this.markBackfilledStmt.run();
    if (!inDir) this.marker?.write(now, written);
    return written;
  }

  /** The oldest settled batch without a receipt and how many lack one, or null (always null with receipts off). */
  missing(): { batch: number; count: number } | null {
    if (!this.enabled) return null;
    const found = this.missingStmt.get(Number.MAX_SAFE_INTEGER) as { batch: number | null; count: number };
    return found.batch === null ? null : { batch: found.batch, count: found.count };
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
    if (batch === undefined) throw new ReissueError('no_batch', `batch ${batchId} does not exist`);
    if (this.getStmt.get(batchId) !== undefined) throw new ReissueError('has_receipt', `batch ${batchId} has its receipt`);
    const earlier = this.missingStmt.get(batchId) as { batch: number | null };
    if (earlier.batch !== null) throw new ReissueError('earlier_missing', `batch ${earlier.batch} has no receipt either; reissue it first`);
    return this.signFromRows(batch, this.beforeStmt.get(batchId) as Receipt | undefined);
  }

  /**
   * Replacing the signing key takes three steps. First the new key is written to the data dir
   * (`prepareRotation`); then the caller commits its public half in an audited transaction
   * (`publishPrepared`); only then does it sign (`activatePrepared`). If the commit fails, the
   * running process keeps signing with the old, published key, and the next start publishes
   * the file's key before it signs anything.
   */
  prepareRotation(): { kid: string; previous_kid: string } {
    const next = this.rotateKey();
    this.pending = next;
    return { kid: next.kid, previous_kid: this.signerNow.kid };
  }

  /** Publish the prepared key's public half (inside the caller's transaction). */
  publishPrepared(kid: string, now: number): void {
    this.addKeyStmt.run(this.prepared(kid).kid, this.prepared(kid).x, now);
  }

  /** The published, prepared key signs from the next batch on. */
  activatePrepared(kid: string): void {
    this.signerNow = this.prepared(kid);
    this.pending = null;
  }

  private prepared(kid: string): ReceiptSigner {
    if (this.pending?.kid !== kid) throw new Error(`no signing key ${kid} is prepared (another rotation replaced it)`);
    return this.pending;
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
    const provider = this.providerId(batch.endpoint_id);
    const leaves = (this.leavesStmt.all(batch.id) as LeafRow[]).map((row) => this.leaf(batch.id, provider, row));
    return this.sign(batch, this.hasher.start(leaves).result(), leaves.length, prev);
  }

  /** Sign `batch` as the receipt after `prev` (the receipt of the batch before it, if any). */
  private sign(batch: ReceiptBatch, tree: StoredTree, treeSize: number, prev: Receipt | undefined): Receipt {
    if (prev !== undefined && prev.batch >= batch.id)
      throw new Error(`receipts: batch ${batch.id} is not after the receipt it chains to (${prev.batch})`);
    if (treeSize === 0) throw new Error(`receipts: batch ${batch.id} has no calls`);
    const unsigned: UnsignedReceipt = {
      v: RECEIPT_VERSION,
      batch: batch.id,
      prev: prev === undefined ? GENESIS_PREV : receiptHash(prev),
      root: tree.root,
      tree_size: treeSize,
      refunds: batch.refunds,
      premiums: batch.premiums,
      settled_at: new Date(batch.created_at).toISOString(),
      kid: this.signerNow.kid,
    };
    const receipt: Receipt = { ...unsigned, sig: this.signerNow.sign(receiptSigningBytes(unsigned)) };
    this.insertStmt.run({ ...receipt, subtrees: tree.subtrees });
    return receipt;
  }

  /** Stop the hasher's worker thread. */
  close(): void {
    this.hasher.close();
  }

  // -------------------------------------------------------------------------------------
  // Reading

  /** The newest receipt, or null. */
  head(): Receipt | null {
    return (this.headStmt.get() as Receipt | undefined) ?? null;
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
    const rows = this.keysStmt.all() as { kid: string; x: string }[];
    const current = this.signerNow.kid;
    rows.sort((a, b) => Number(b.kid === current) - Number(a.kid === current));
    return { keys: rows.map((r) => ({ kty: 'OKP', crv: 'Ed25519', x: r.x, kid: r.kid, use: 'sig' })) };
  }

  /** The leaves of one batch, in leaf order, as published (from the calls' rows). */
  leaves(batchId: number): ReceiptLeaf[] {
    const batch = this.batchStmt.get(batchId) as ReceiptBatch | undefined;
    if (batch === undefined) return [];
    return this.leafRows(batchId, this.providerId(batch.endpoint_id), this.leavesStmt.all(batchId) as LeafRow[]);
  }

  /**
   * The inclusion proof of a call (by the gateway's call id), or why there is none. With the
   * batch's stored run roots (checked against the receipt's root) it reads only the call's run
   * of 64 rows; without them, or when they disagree with the rows, it hashes the whole batch. Either way the leaf and path come
   * from the rows as they are now, so a rewritten row yields a proof that does not verify.
   */
  proof(callId: string): ProofLookup {
    const call = this.callStmt.get(callId) as { settled_batch: number | null; received_at: number } | undefined;
    if (call === undefined) return { state: 'unknown' };
    if (call.settled_batch === null) return { state: 'unsettled' };
    const batch = call.settled_batch;
    const receipt = this.get(batch);
    if (receipt === null) return { state: 'unreceipted', batch };
    const found = this.proofFromRun(batch, callId, call.received_at, receipt.root) ?? this.proofFromBatch(batch, callId);
    return { state: 'settled', proof: { ...found, tree_size: receipt.tree_size, receipt } };
  }

  private proofFromRun(batch: number, callId: string, receivedAt: number, root: string): Omit<CallProof, 'tree_size' | 'receipt'> | null {
    const stored = this.subtreesStmt.get(batch) as Buffer | null | undefined;
    if (!stored) return null;
    const runs = splitSubtrees(stored);
    if (toHex(rootOf(runs)) !== root) return null;
    const index = this.indexStmt.get(batch, receivedAt, callId) as number;
    const run = Math.floor(index / SUBTREE_LEAVES);
    const provider = this.providerId((this.batchStmt.get(batch) as ReceiptBatch).endpoint_id);
    const leaves = this.leafRows(batch, provider, this.runStmt.all(batch, run * SUBTREE_LEAVES) as LeafRow[]);
    const at = index - run * SUBTREE_LEAVES;
    if (run >= runs.length || leaves[at]?.call_id !== callId) return null;
    const inner = inclusionPath(
      leaves.map((l) => leafHash(leafCanonical(l))),
      at,
    );
    if (inner.root !== runs[run]) return null;
    const outer = inclusionPath(runs, run);
    return { leaf: leaves[at], leaf_index: index, audit_path: [...inner.path, ...outer.path].map(toHex) };
  }

  private proofFromBatch(batch: number, callId: string): Omit<CallProof, 'tree_size' | 'receipt'> {
    const leaves = this.leaves(batch);
    const index = leaves.findIndex((l) => l.call_id === callId);
    const { path } = inclusionPath(
      leaves.map((l) => leafHash(leafCanonical(l))),
      index,
    );
    return { leaf: leaves[index]!, leaf_index: index, audit_path: path.map(toHex) };
  }

  private leafRows(batch: number, provider: string, rows: LeafRow[]): ReceiptLeaf[] {
    return rows.map((row) => leafOf(batch, provider, row));
  }
}
