/**
 * What the receipts table family is besides its SQL (`sql/receipts.ts`), so a receipt is built,
 * chained, signed and proved by one piece of code whichever database holds it:
 *
 * - the state that outlives one statement: the key that signs (and one prepared by a rotation,
 *   not signing yet), the tree hasher's worker, the provider ids, the data dir's backfill record;
 * - the pure steps between statements: a call's canonical leaf, the unsigned receipt chained to
 *   the one before and its signature, the JWKS in its published order, the inclusion proof of a
 *   call from its run of 64 leaves or from the whole batch, and the reasons a backfill or a
 *   reissue does or refuses what it does.
 *
 * Nothing here runs SQL; every method is synchronous (a batch's leaves cost no promise each).
 */
import { inclusionPath, leafHash, rootOf, toHex, type Hash32 } from '../../protocol/merkle';
import type { CallProof, Checkpoint, Receipt, ReceiptJwks, ReceiptLeaf } from '../../protocol/receipts';
import {
  GENESIS_PREV,
  RECEIPT_VERSION,
  checkpointOf,
  checkpointSigningBytes,
  leafCanonical,
  receiptHash,
  receiptSigningBytes,
  type UnsignedReceipt,
} from '../../protocol/receipts-verify';
import type { Clamp } from '../../protocol/settlement';
import type { BackfillMarker } from './backfill-marker';
import type { ReceiptSigner } from './signing-key';
import { SUBTREE_LEAVES, splitSubtrees } from '../../protocol/receipt-tree';
import { TreeHasher, type PendingTree, type StoredTree } from './tree-hasher';
import { CodedError } from '../../protocol/coded-error';
import { KeyNotPreparedError } from './errors';

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
export class MissingReceiptError extends CodedError {
  override readonly code = 'SVC_ERR_MISSING_RECEIPT';
  constructor(readonly batch: number) {
    super(`batch ${batch} is settled but has no receipt`);
  }
}

/** Why `reissue` refuses: no such batch, it has its receipt, or an earlier batch lacks one. */
export class ReissueError extends CodedError {
  override readonly code = 'SVC_ERR_REISSUE';
  constructor(
    readonly reason: 'no_batch' | 'has_receipt' | 'earlier_missing',
    message: string,
  ) {
    super(message);
  }

  static noBatch = (batch: number): ReissueError => new ReissueError('no_batch', `batch ${batch} does not exist`);
  static hasReceipt = (batch: number): ReissueError => new ReissueError('has_receipt', `batch ${batch} has its receipt`);
  static earlierMissing = (earlier: number): ReissueError =>
    new ReissueError('earlier_missing', `batch ${earlier} has no receipt either; reissue it first`);
}

export type ProofLookup =
  { state: 'unknown' } | { state: 'unsettled' } | { state: 'unreceipted'; batch: number } | { state: 'settled'; proof: CallProof };

/** A call's leaf, its index and audit path: a `CallProof` without the receipt it leads to. */
export type ProofPath = Omit<CallProof, 'tree_size' | 'receipt'>;

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

/** A receipt signed by `ReceiptsCore.sign`, with the run roots stored beside it (not part of it). */
export interface SignedReceipt {
  receipt: Receipt;
  subtrees: Buffer;
}

/** What the backfill (`ReceiptsTable.open`) has to do, given where the backfill is recorded. */
export interface BackfillPlan {
  /** Neither record exists: sign every batch after the newest receipt, and record it in the database. */
  fill: boolean;
  /** Only the data dir records it: record it in the database too. */
  markDatabase: boolean;
  /** The data dir does not record it: record it there (after the database). */
  markDataDir: boolean;
}

/** A published key, as the `receipt_keys` table holds it. */
export interface ReceiptKeyRow {
  kid: string;
  x: string;
}

export class ReceiptsCore {
  readonly enabled: boolean;
  private signerNow: ReceiptSigner;
  /** A key written by `prepareRotation`, not signing until `activatePrepared`. */
  private pending: ReceiptSigner | null = null;
  private readonly providerId: (endpointId: string) => string;
  private readonly rotateKey: () => ReceiptSigner;
  private readonly hasher: TreeHasher;
  private readonly marker: BackfillMarker | null;

  constructor(opts: ReceiptsOptions) {
    this.enabled = opts.enabled ?? true;
    this.signerNow = opts.signer;
    this.providerId = opts.providerId;
    this.rotateKey = opts.rotateKey;
    this.hasher = opts.hasher ?? new TreeHasher(this.enabled ? undefined : null);
    this.marker = opts.backfillMarker ?? null;
  }

  /** The kid that signs new receipts. */
  get kid(): string {
    return this.signerNow.kid;
  }

  /** The key that signs new receipts, to publish before it signs anything. */
  get signing(): ReceiptKeyRow {
    return { kid: this.signerNow.kid, x: this.signerNow.x };
  }

  /** The opaque provider id that a batch's leaves name. */
  provider(endpointId: string): string {
    return this.providerId(endpointId);
  }

  /** The checkpoint of the chain whose newest receipt is `head`, signed by the current key. */
  checkpoint(head: Receipt): Checkpoint {
    const unsigned = checkpointOf(head, this.signerNow.kid);
    return { ...unsigned, sig: this.signerNow.sign(checkpointSigningBytes(unsigned)) };
  }

  /** The canonical leaf of one settled call of `batch`, with the amounts written on the call's row. */
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
   * Sign `batch` as the receipt after `prev` (the receipt of the batch before it, if any), its
   * `treeSize` leaves making `tree`, by the current key. The caller stores it.
   */
  sign(batch: ReceiptBatch, tree: StoredTree, treeSize: number, prev: Receipt | undefined): SignedReceipt {
    if (prev !== undefined && prev.batch >= batch.id)
      throw new RangeError(`receipts: batch ${batch.id} is not after the receipt it chains to (${prev.batch})`);
    if (treeSize === 0) throw new RangeError(`receipts: batch ${batch.id} has no calls`);
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
    return { receipt: { ...unsigned, sig: this.signerNow.sign(receiptSigningBytes(unsigned)) }, subtrees: tree.subtrees };
  }

  /** Sign `batch` from its calls' rows (in leaf order) as they are now, chained to `prev`. */
  signRows(batch: ReceiptBatch, rows: readonly LeafRow[], prev: Receipt | undefined): SignedReceipt {
    const provider = this.providerId(batch.endpoint_id);
    const leaves = rows.map((row) => this.leaf(batch.id, provider, row));
    return this.sign(batch, this.hasher.start(leaves).result(), leaves.length, prev);
  }

  /**
   * The backfill runs once per install: unless the database (`inDatabase`) or the data dir
   * records that it ran. A record missing from one place is written again from the other.
   */
  backfillPlan(inDatabase: boolean): BackfillPlan {
    const inDataDir = this.marker?.exists() ?? false;
    return { fill: !inDatabase && !inDataDir, markDatabase: !inDatabase && inDataDir, markDataDir: !inDataDir };
  }

  /** Record in the data dir that the backfill ran (after the database recorded it). */
  markDataDir(now: number, written: number): void {
    this.marker?.write(now, written);
  }

  /** `missing()`'s answer from the oldest batch without a receipt and how many lack one. */
  static missing(found: { batch: number | null; count: number }): { batch: number; count: number } | null {
    return found.batch === null ? null : { batch: found.batch, count: found.count };
  }

  /**
   * Replacing the signing key takes three steps. First the new key is written to the data dir
   * (`prepareRotation`); then the caller commits its public half in an audited transaction
   * (`publishPrepared`, with `prepared`); only then does it sign (`activatePrepared`). If the
   * commit fails, the running process keeps signing with the old, published key, and the next
   * start publishes the file's key before it signs anything.
   */
  prepareRotation(): { kid: string; previous_kid: string } {
    const next = this.rotateKey();
    this.pending = next;
    return { kid: next.kid, previous_kid: this.signerNow.kid };
  }

  /** The prepared key `kid`, to publish. */
  prepared(kid: string): ReceiptKeyRow {
    const key = this.preparedSigner(kid);
    return { kid: key.kid, x: key.x };
  }

  /** The published, prepared key signs from the next batch on. */
  activatePrepared(kid: string): void {
    this.signerNow = this.preparedSigner(kid);
    this.pending = null;
  }

  private preparedSigner(kid: string): ReceiptSigner {
    if (this.pending?.kid !== kid) throw new KeyNotPreparedError(kid);
    return this.pending;
  }

  /** The published keys (newest first) as the JWKS: the current one first (RFC 8037 JWKs). */
  jwks(rows: ReceiptKeyRow[]): ReceiptJwks {
    const current = this.signerNow.kid;
    rows.sort((a, b) => Number(b.kid === current) - Number(a.kid === current));
    return { keys: rows.map((r) => ({ kty: 'OKP', crv: 'Ed25519', x: r.x, kid: r.kid, use: 'sig' })) };
  }

  /** The leaves of `batch` (of endpoint `endpointId`) from its calls' rows, in leaf order. */
  leaves(batch: number, endpointId: string, rows: readonly LeafRow[]): ReceiptLeaf[] {
    const provider = this.providerId(endpointId);
    return rows.map((row) => leafOf(batch, provider, row));
  }

  /** The run roots stored with a receipt, if there are any and they make its `root`; else null. */
  static runs(stored: Buffer | null | undefined, root: string): Hash32[] | null {
    if (!stored) return null;
    const runs = splitSubtrees(stored);
    return toHex(rootOf(runs)) === root ? runs : null;
  }

  /** The run of `SUBTREE_LEAVES` leaves that holds leaf `index`, and the offset of its first row. */
  static runOf(index: number): { run: number; offset: number } {
    const run = Math.floor(index / SUBTREE_LEAVES);
    return { run, offset: run * SUBTREE_LEAVES };
  }

  /**
   * The proof of `callId`, leaf `index` of `batch`, from the rows of its run (`runOf`) and the
   * batch's stored run roots; null when the rows do not make the stored run's root (or the call
   * is not where its index says), so the caller hashes the whole batch instead.
   */
  proofInRun(
    batch: number,
    endpointId: string,
    callId: string,
    index: number,
    runs: readonly Hash32[],
    rows: readonly LeafRow[],
  ): ProofPath | null {
    const { run, offset } = ReceiptsCore.runOf(index);
    const leaves = this.leaves(batch, endpointId, rows);
    const at = index - offset;
    if (run >= runs.length || leaves[at]?.call_id !== callId) return null;
    const inner = inclusionPath(
      leaves.map((l) => leafHash(leafCanonical(l))),
      at,
    );
    if (inner.root !== runs[run]) return null;
    const outer = inclusionPath(runs, run);
    return { leaf: leaves[at], leaf_index: index, audit_path: [...inner.path, ...outer.path].map(toHex) };
  }

  /** The proof of `callId` from every leaf of its batch. */
  static proofInBatch(leaves: readonly ReceiptLeaf[], callId: string): ProofPath {
    const index = leaves.findIndex((l) => l.call_id === callId);
    const { path } = inclusionPath(
      leaves.map((l) => leafHash(leafCanonical(l))),
      index,
    );
    return { leaf: leaves[index]!, leaf_index: index, audit_path: path.map(toHex) };
  }

  /** Stop the hasher's worker thread. */
  close(): void {
    this.hasher.close();
  }
}
