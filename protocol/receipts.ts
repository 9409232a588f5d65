/**
 * Settlement receipts on the wire (indexer, docs/design.md §11): the leaf of every settled call, the
 * signed receipt of every settlement batch, the JWKS of the signing keys, receipt pages and
 * per-call inclusion proofs. Third parties write verifiers against these shapes, so every
 * field is fixed here and nowhere else; `receipts-verify.ts` holds the same shapes as plain
 * interfaces (the verifier ships without zod) and a compile-time check below keeps the two
 * identical.
 *
 * Bytes: a leaf and a receipt are hashed and signed as their RFC 8785 (JCS) canonical JSON;
 * trees and proofs follow RFC 9162 §2.1; signatures are Ed25519 (RFC 8032), keys published
 * as OKP JWKs (RFC 8037).
 */
import { z } from 'zod';
import { Outcome } from './outcome';
import type { ConsistencyFailure as ConsistencyFailureName } from './receipts-consistency';
import type { CallProofFields, CheckpointFields, ReceiptFields, ReceiptJwkFields, ReceiptLeafFields } from './receipts-verify';
import { Clamp, SettlerHalt } from './settlement';
import { IsoTime, MicroAmount } from './wire';

/** A SHA-256 hash as 64 lowercase hex digits. */
export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);
/** Unpadded base64url (RFC 4648 §5). */
export const Base64Url = z.string().regex(/^[A-Za-z0-9_-]+$/);
const BatchNumber = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
/**
 * A batch number as a URL writes it (`/api/receipts/<batch>`, `after=`): up to 15 digits in
 * their one canonical form, without a sign or a leading zero (`0` itself is fine), so each
 * receipt has exactly one URL.
 */
export const BATCH_NUMBER_TEXT = /^(0|[1-9][0-9]{0,14})$/;

/**
 * One settled call, the leaf of its batch's tree. It names the call and the provider, never
 * the caller: `call_id` is the gateway's `X-Svc-Call-Id`, `provider` the opaque id of
 * `/api/v1/providers`.
 */
export const ReceiptLeaf = z.strictObject({
  batch: BatchNumber,
  call_id: z.string().min(1),
  provider: z.string().min(1),
  outcome: Outcome,
  /** Premium collected, micro-units. */
  premium: MicroAmount,
  /** Refund paid, micro-units (after any clamp). */
  refund: MicroAmount,
  clamp: Clamp.nullable(),
});
export type ReceiptLeaf = z.infer<typeof ReceiptLeaf>;

/** The signed receipt of one settlement batch; receipts chain across all endpoints in batch order. */
export const Receipt = z.strictObject({
  v: z.literal(1),
  batch: BatchNumber,
  /** Hex SHA-256 of the previous receipt's canonical bytes (with its `sig`); 64 zeros for batch 1. */
  prev: Sha256Hex,
  /** RFC 9162 root over the batch's leaves, in `leaf_index` order. */
  root: Sha256Hex,
  tree_size: z.number().int().min(1),
  /** Sum of the leaves' refunds and premiums. */
  refunds: MicroAmount,
  premiums: MicroAmount,
  settled_at: IsoTime,
  /** Id of the signing key in `/api/receipts/keys` (its RFC 7638 thumbprint). */
  kid: z.string().min(1),
  /** Ed25519 signature over the canonical bytes of the receipt without `sig`, base64url. */
  sig: Base64Url,
});
export type Receipt = z.infer<typeof Receipt>;

/** One public signing key (RFC 8037 OKP JWK). */
export const ReceiptJwk = z.strictObject({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: Base64Url,
  kid: z.string().min(1),
  use: z.literal('sig'),
});
export type ReceiptJwk = z.infer<typeof ReceiptJwk>;

/** `GET {indexer_url}/api/receipts/keys`: every key that ever signed, current first. */
export const ReceiptJwks = z.strictObject({ keys: z.array(ReceiptJwk) });
export type ReceiptJwks = z.infer<typeof ReceiptJwks>;

/** `GET {indexer_url}/api/receipts?after=&limit=`: receipts in ascending batch order. */
export const ReceiptsPage = z.strictObject({
  receipts: z.array(Receipt),
  /** Pass as `after` for the next page; null when this page reaches the newest receipt. */
  next_after: BatchNumber.nullable(),
});
export type ReceiptsPage = z.infer<typeof ReceiptsPage>;

/** `GET {indexer_url}/api/calls/<call_id>/proof`: an RFC 9162 §2.1.3 inclusion proof. */
export const CallProof = z.strictObject({
  leaf: ReceiptLeaf,
  leaf_index: z.number().int().min(0),
  tree_size: z.number().int().min(1),
  /** Sibling hashes from the leaf up to the root's child, hex. */
  audit_path: z.array(Sha256Hex),
  receipt: Receipt,
});
export type CallProof = z.infer<typeof CallProof>;

/**
 * `GET {indexer_url}/api/receipts/checkpoint`: the chain's head, signed like a receipt (Ed25519
 * over the canonical bytes without `sig`, by the key that signs receipts now). Save one; later,
 * `/api/receipts/consistency` shows whether the history served then still leads to it.
 */
export const Checkpoint = z.strictObject({
  v: z.literal(1),
  kind: z.literal('checkpoint'),
  /** The newest receipt's batch. */
  batch: BatchNumber,
  /** Hex SHA-256 of that receipt's canonical bytes, `sig` included: the `prev` the next receipt will hold. */
  hash: Sha256Hex,
  /** Id of the signing key in `/api/receipts/keys`. */
  kid: z.string().min(1),
  /** Ed25519 signature over the canonical bytes of the checkpoint without `sig`, base64url. */
  sig: Base64Url,
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/** `GET {indexer_url}/api/receipts/consistency?from=&to=`: the receipts of batches `from` to `to`, ascending. */
export const ConsistencyAnswer = z.strictObject({ receipts: z.array(Receipt) });
export type ConsistencyAnswer = z.infer<typeof ConsistencyAnswer>;

/** Which check of `verifyConsistency` failed (`ConsistencyFailure` of receipts-consistency.ts). */
export const ConsistencyFailure = z.enum([
  'checkpoint_malformed',
  'checkpoint_signature',
  'history_cut',
  'receipts_missing',
  'receipt_malformed',
  'receipt_out_of_place',
  'receipt_link',
  'receipt_signature',
  'saved_checkpoint_mismatch',
  'served_checkpoint_mismatch',
]);

/** What `svcctl receipts verify --since-checkpoint FILE --json` prints. */
export const ConsistencyVerifyView = z.strictObject({
  ok: z.boolean(),
  /** The indexer whose public reads were checked. */
  indexer: z.string(),
  /** The saved checkpoint's batch and the served one's. */
  from: BatchNumber,
  to: BatchNumber,
  /**
   * Receipts checked: every one from batch 1 to `to` (the history before the saved checkpoint
   * is checked too, so this is the whole chain), fewer when a check failed.
   */
  receipts: z.number().int().min(0),
  /** The served checkpoint: save it to check from there next time (when `ok`). */
  checkpoint: Checkpoint,
  /** Where the histories part, when they do: the batch, the hash expected and the hash served. */
  batch: BatchNumber.nullable(),
  expected: Sha256Hex.nullable(),
  served: Sha256Hex.nullable(),
  reason: z.string().nullable(),
  /** The check that failed, stable for programs (see `ConsistencyFailure` in receipts-consistency.ts); null when `ok`. */
  failure: ConsistencyFailure.nullable(),
});
export type ConsistencyVerifyView = z.infer<typeof ConsistencyVerifyView>;

/** `POST /_admin/v1/receipts/rotate-key` (what `svcctl receipts rotate-key` prints). */
export const RotateKeyView = z.strictObject({
  /** The key that signs from now on. */
  kid: z.string(),
  /** The key it replaces; still published. */
  previous_kid: z.string(),
  created_at: IsoTime,
  /** Every published key id, current first. */
  published: z.array(z.string()),
});
export type RotateKeyView = z.infer<typeof RotateKeyView>;

/**
 * `POST /_admin/v1/receipts/{batch}/reissue` (what `svcctl receipts reissue BATCH` prints): the
 * receipt a settled batch without one was given, signed by the current key from the batch's rows
 * as they are now and chained to the receipt before it; the audit row and the public changelog
 * entry that record it; and whether the settler is still halted (another batch lacks its receipt).
 */
export const ReissueView = z.strictObject({
  receipt: Receipt,
  /** The public changelog entry that announces the re-signing. */
  changelog_id: z.number().int().min(1),
  /** The settler's halt afterwards: null once no settled batch lacks its receipt. */
  halted: SettlerHalt.nullable(),
});
export type ReissueView = z.infer<typeof ReissueView>;

/** What `svcctl receipts verify --json` prints. */
export const ReceiptsVerifyView = z.strictObject({
  ok: z.boolean(),
  /** The indexer whose public reads were checked. */
  indexer: z.string(),
  /** Receipts that passed (batches 1..n); the indexer's settled batches when `ok`. */
  receipts: z.number().int().min(0),
  /** Usable keys in the JWKS, and whether it was the published one or pinned with `--jwks`. */
  keys: z.number().int().min(0),
  jwks: z.enum(['published', 'pinned']),
  /** Sums of the receipts that passed. */
  refunds: MicroAmount,
  premiums: MicroAmount,
  /** The first bad batch, when one can be named. */
  first_bad_batch: BatchNumber.nullable(),
  /** Why the check failed, as a sentence; null when `ok`. */
  reason: z.string().nullable(),
  /** Keys of the JWKS that were left out, and why. */
  key_problems: z.array(z.string()),
});
export type ReceiptsVerifyView = z.infer<typeof ReceiptsVerifyView>;

// The verifier's plain interfaces must be these shapes exactly.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const shapesAgree: [
  Same<ReceiptLeaf, ReceiptLeafFields>,
  Same<Receipt, ReceiptFields>,
  Same<ReceiptJwk, ReceiptJwkFields>,
  Same<CallProof, CallProofFields>,
  Same<Checkpoint, CheckpointFields>,
  Same<z.infer<typeof ConsistencyFailure>, ConsistencyFailureName>,
] = [true, true, true, true, true, true];
void shapesAgree;
