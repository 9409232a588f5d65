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
 * The signer, the hasher and every step between statements (leaves, signing, the JWKS order,
 * proofs) are `receipts-core.ts`; the SQL is `sql/receipts.ts`.
 */
import type { Checkpoint, Receipt, ReceiptJwks } from '../../protocol/receipts';
import type { Conn } from './conn';
import type { ProofLookup, ReceiptBatch, ReceiptsCore, SignedReceipt } from './receipts-core';
import type { PendingTree } from './tree-hasher';

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
