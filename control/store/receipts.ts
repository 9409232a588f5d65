/**
 * Settlement receipts (migration 9, docs/design.md §11): one signed receipt per settlement batch,
 * chained across all endpoints in batch order, and the public keys that signed them.
 *
 * - `append` runs inside the settler's batch transaction, so a batch and its receipt commit
 *   together or not at all: a crash can leave neither a batch without its receipt nor a gap in
 *   the chain. That transaction holds the store's writer lock, so the head it chains to cannot
 *   move under it; `receipts.batch` is the primary key, so no two receipts ever claim one batch.
 * - The backfill (`open`) gives every batch that has none (settled before migration 9) its
 *   receipt, in batch order, in one transaction under the writer lock; the store runs it on
 *   open, before anything else. It runs ONCE per install: the database (`meta.receipts_backfilled`,
 *   migration 14) and the data dir (`backfill-marker.ts`) record that it ran, and either record
 *   stops it (of several processes opening one database at once, one signs and the others find
 *   it done). From then on a settled batch without a receipt is an integrity failure (`missing`):
 *   the settler halts on it, `append` refuses to extend the chain past it, and only an operator
 *   re-signs it (`reissue`, audited and announced in the public changelog).
 * - A batch's leaves are its calls in settlement order (received_at, call_id): the order the
 *   settler selected them in, kept by the `settled_calls_by_batch` index, so `leaf_index` needs no
 *   column (it is the count of the batch's calls before it in that order). With each receipt
 *   are stored the roots of the batch's runs of 64 leaves (migration 10, `protocol/receipt-tree.ts`),
 *   so a proof reads and hashes only its call's run, whatever the batch size.
 *
 * The signer, the hasher and the provider ids come from the receipts feature
 * (`control/receipts/maker.ts`) through `ReceiptsCore`, built by the factory every open is given
 * (`StoreOptions.receiptsCore`); the SQL is `sql/receipts.ts`.
 */
import type { CallProof, Checkpoint, Receipt, ReceiptJwks, ReceiptLeaf } from '../../protocol/receipts';
import type { Clamp } from '../../protocol/settlement';
import { CodedError } from '../../protocol/coded-error';
import type { Conn } from './conn';

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

/** A batch's tree as a receipt stores it: the root in hex, the run roots as bytes. */
export interface StoredTree {
  root: string;
  subtrees: Buffer;
}

/** A tree being computed; `result()` waits for it. */
export interface PendingTree {
  result(): StoredTree;
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

/**
 * What the receipts family needs besides its SQL: the key that signs (and one prepared by a
 * rotation, not signing yet), the tree hasher, the provider ids, the data dir's record of the
 * backfill, and the pure steps between statements. Every method is synchronous (a batch's leaves
 * cost no promise each). `control/receipts/maker.ts` is the one implementation.
 */
export interface ReceiptsCore {
  /** Write receipts (off only for `bench:settlement`'s side-by-side baseline). */
  readonly enabled: boolean;
  /** The kid that signs new receipts. */
  readonly kid: string;
  /** The key that signs new receipts, to publish before it signs anything. */
  readonly signing: ReceiptKeyRow;
  /** The opaque provider id that a batch's leaves name (as `/api/v1/providers` shows it). */
  provider(endpointId: string): string;
  /** The canonical leaf of one settled call of `batch`, with the amounts written on the call's row. */
  leaf(batch: number, provider: string, call: LeafRow): string;
  /** The leaves of `batch` (of endpoint `endpointId`) from its calls' rows, in leaf order. */
  leaves(batch: number, endpointId: string, rows: readonly LeafRow[]): ReceiptLeaf[];
  /** Start computing the tree of a batch's canonical leaves (on the hasher's thread). */
  startTree(leaves: readonly string[]): PendingTree;
  /** Sign `batch`, its `treeSize` leaves making `tree`, chained to `prev` (the receipt before it, if any). */
  sign(batch: ReceiptBatch, tree: StoredTree, treeSize: number, prev: Receipt | undefined): SignedReceipt;
  /** Sign `batch` from its calls' rows (in leaf order) as they are now, chained to `prev`. */
  signRows(batch: ReceiptBatch, rows: readonly LeafRow[], prev: Receipt | undefined): SignedReceipt;
  /** The checkpoint of the chain whose newest receipt is `head`, signed by the current key. */
  checkpoint(head: Receipt): Checkpoint;
  /** The backfill runs once per install: unless the database (`inDatabase`) or the data dir records it. */
  backfillPlan(inDatabase: boolean): BackfillPlan;
  /** Record in the data dir that the backfill ran (after the database recorded it). */
  markDataDir(now: number, written: number): void;
  /** Write a new key (it signs once published and activated). */
  prepareRotation(): { kid: string; previous_kid: string };
  /** The prepared key `kid`, to publish (`KeyNotPreparedError` for any other kid). */
  prepared(kid: string): ReceiptKeyRow;
  /** The published, prepared key signs from the next batch on. */
  activatePrepared(kid: string): void;
  /** The published keys (`rows`, newest first) as the JWKS, the current one first. */
  jwks(rows: ReceiptKeyRow[]): ReceiptJwks;
  /** Stop the hasher's worker thread. */
  close(): void;
}

/** Where a store's receipts core is made: the data dir (null for an in-memory store) and the database's id secret. */
export interface ReceiptsSetup {
  dataDir: string | null;
  idSecret: Buffer;
  enabled: boolean;
  /** Hash trees on the calling thread (PostgreSQL: the server runs the statements, nothing overlaps). */
  hashInline: boolean;
}

/** Makes a store's `ReceiptsCore` once the store has read its id secret (`control/receipts/maker.ts` `makeReceipts`). */
export type ReceiptsFactory = (setup: ReceiptsSetup) => ReceiptsCore;

/** A settling transaction's receipts, in batch order (`ReceiptsTable.chain`). */
export interface ReceiptChain {
  /** Sign the receipt of `batch` (the batch after the last one signed), waiting for its tree. */
  sign(batch: ReceiptBatch, tree: PendingTree, treeSize: number): SignedReceipt;
}

export interface ReceiptsTable {
  /** Whether settlement batches get receipts (off only in the settlement bench's baseline). */
  readonly enabled: boolean;
  /**
   * The signer, the hasher and the steps between statements, synchronous (`provider`, `leaf`,
   * `startTree`), for the settlement to build a batch's leaves without a promise per call.
   */
  readonly core: ReceiptsCore;
  /** This table on `conn` (another transaction's connection), sharing this store's signer and hasher. */
  on(conn: Conn): ReceiptsTable;
  /**
   * Publish the data dir's key (before it signs anything), then, with receipts on, the receipts
   * backfill once per install: unless the database or the data dir records that it ran,
   * receipts for every batch after the newest receipt, in batch order, in ONE transaction that
   * also records it in the database; then the data dir's record. A record missing from one
   * place is written again from the other. The store runs it when it opens. Returns how many
   * receipts it wrote.
   */
  open(now: number): Promise<number>;
  /** The kid that signs new receipts. */
  currentKid(): Promise<string>;
  /**
   * Sign and store the receipt of `batch`, whose `treeSize` leaves make the tree `tree`, in the
   * batch's transaction (the one this table runs on). A batch between the newest receipt and
   * this one without a receipt throws `MissingReceiptError` (the transaction, and the batch,
   * roll back): the chain never grows past a gap, and nothing but `reissue` signs an older batch.
   */
  append(batch: ReceiptBatch, tree: PendingTree, treeSize: number): Promise<Receipt>;
  /**
   * The receipts of one settling transaction's batches, numbered `firstBatch`, `firstBatch + 1`, …
   * (in the transaction that holds the writer lock): the head they chain to, and the check that
   * every batch between it and `firstBatch` has a receipt (else `MissingReceiptError`), are read
   * once here (`append` is a chain of one). Each `sign` of the chain then signs at once, chained
   * to the receipt before it; the caller stores it.
   */
  chain(firstBatch: number): Promise<ReceiptChain>;
  /** The oldest settled batch without a receipt and how many lack one, or null (always null with receipts off). */
  missing(): Promise<{ batch: number; count: number } | null>;
  /**
   * Sign `batchId`, a settled batch without a receipt, again: its leaves from its calls' rows as
   * they are now, chained to the receipt of the batch before it, by the current key. Runs in
   * the caller's audited transaction (or one of its own under the writer lock). Refuses
   * (`ReissueError`) a batch that does not exist, one that has its receipt, and one with an
   * earlier batch still lacking its receipt (the chain is re-signed in batch order). When later
   * batches have receipts, the new receipt links to them only if it is byte for byte the one
   * that was lost (same rows, same key).
   */
  reissue(batchId: number): Promise<Receipt>;
  /** Write a new signing key to the data dir; it signs once published and activated (`ReceiptsCore.prepareRotation`). */
  prepareRotation(): Promise<{ kid: string; previous_kid: string }>;
  /** Publish the prepared key's public half (inside the caller's transaction). */
  publishPrepared(kid: string, now: number): Promise<void>;
  /** The published, prepared key signs from the next batch on. */
  activatePrepared(kid: string): Promise<void>;
  /** The newest receipt, or null. */
  head(): Promise<Receipt | null>;
  /**
   * The checkpoint of the chain whose newest receipt is `head` (read with `head()`), signed by the
   * current key. The caller signs only over a chain it verified (`receipts/chain-guard.ts`).
   */
  checkpoint(head: Receipt): Promise<Checkpoint>;
  /** The receipt of `batch`, or null. */
  get(batch: number): Promise<Receipt | null>;
  /** Up to `limit` receipts after batch `after`, ascending. */
  page(after: number, limit: number): Promise<Receipt[]>;
  count(): Promise<number>;
  /** Every key that signed or signs receipts, the current one first (RFC 8037 JWKs). */
  jwks(): Promise<ReceiptJwks>;
  /**
   * The inclusion proof of a call (by the gateway's call id), or why there is none, read in one
   * snapshot. With the batch's stored run roots (checked against the receipt's root) it reads
   * only the call's run of 64 rows; without them, or when they disagree with the rows, it hashes
   * the whole batch. Either way the leaf and path come from the rows as they are now, so a
   * rewritten row yields a proof that does not verify.
   */
  proof(id: string): Promise<ProofLookup>;
}
