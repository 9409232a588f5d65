/**
 * The receipts core every store is given (`ReceiptsCore` in `control/store/receipts.ts`): the
 * state that outlives one statement (the key that signs, and one prepared by a rotation, not
 * signing yet; the tree hasher's worker; the provider ids; the data dir's backfill record) and
 * the pure steps between statements: a call's canonical leaf, the unsigned receipt chained to
 * the one before and its signature, the JWKS in its published order, the backfill's plan.
 *
 * Nothing here runs SQL; every method is synchronous (a batch's leaves cost no promise each).
 */
import { OpaqueIds } from '../../protocol/opaque-ids';
import type { Checkpoint, Receipt, ReceiptJwks, ReceiptLeaf } from '../../protocol/receipts';
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
import { KeyNotPreparedError } from '../store/errors';
import {
  leafOf,
  type BackfillPlan,
  type LeafRow,
  type PendingTree,
  type ReceiptBatch,
  type ReceiptKeyRow,
  type ReceiptsCore,
  type ReceiptsFactory,
  type SignedReceipt,
  type StoredTree,
} from '../store/receipts';
import { backfillMarker, type BackfillMarker } from './backfill-marker';
import { ReceiptSigner, loadOrCreateSigner, rotateSigner } from './signing-key';
import { TreeHasher } from './tree-hasher';

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

/**
 * A store's receipts core (`ReceiptsFactory`): the signing key of `dataDir` (created on first
 * open; null: an in-memory store, with a throwaway key and no backfill record), provider ids
 * from the database's id secret, and the hasher (a worker thread unless `hashInline`).
 */
export const makeReceipts: ReceiptsFactory = ({ dataDir, idSecret, enabled, hashInline }) => {
  const ids = new OpaqueIds(idSecret);
  return new ReceiptMaker({
    signer: dataDir === null ? ReceiptSigner.generate() : loadOrCreateSigner(dataDir).signer,
    providerId: (endpointId) => ids.provider(endpointId),
    rotateKey: () => (dataDir === null ? ReceiptSigner.generate() : rotateSigner(dataDir)),
    enabled,
    backfillMarker: dataDir === null ? null : backfillMarker(dataDir),
    ...(hashInline ? { hasher: new TreeHasher(null) } : {}),
  });
};

export class ReceiptMaker implements ReceiptsCore {
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

  /** Stop the hasher's worker thread. */
  close(): void {
    this.hasher.close();
  }
}
