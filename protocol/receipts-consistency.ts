/**
 * Whether the receipt history served now extends the one a saved checkpoint stated, and whether
 * the history up to it is the one it signed (docs/design.md §11): `verifyConsistency`, on the
 * receipt checks of `receipts-verify.ts`. Like it, zod-free (node:crypto through `receipts-verify.ts` only), so the SDK ships this file as it is.
 */
import {
  GENESIS_PREV,
  ReceiptKeyring,
  checkpointShapeProblem,
  receiptHash,
  receiptShapeProblem,
  type CheckpointFields,
  type ReceiptFields,
  type ReceiptJwksFields,
} from './receipts-verify';

/** Most receipts one `/api/receipts/consistency` answer holds. */
export const CONSISTENCY_MAX_RECEIPTS = 1000;

/**
 * Which check failed, stable for programs to match on: a checkpoint malformed or not signed by
 * a key of the JWKS; the served history ends before the saved checkpoint (`history_cut`); fewer
 * receipts served than asked for; a receipt malformed, in another batch's place, not linked by
 * `prev` to the one before, or not signed; the receipt of the saved checkpoint's batch, or of the
 * served one's, not the one the checkpoint states.
 */
export type ConsistencyFailure =
  | 'checkpoint_malformed'
  | 'checkpoint_signature'
  | 'history_cut'
  | 'receipts_missing'
  | 'receipt_malformed'
  | 'receipt_out_of_place'
  | 'receipt_link'
  | 'receipt_signature'
  | 'saved_checkpoint_mismatch'
  | 'served_checkpoint_mismatch';

/** What `verifyConsistency` found. */
export interface ConsistencyVerdict {
  /**
   * True when the served history leads from batch 1 (from the old checkpoint's batch with
   * `{ from: 'checkpoint' }`) through the old checkpoint to the new one unchanged.
   */
  ok: boolean;
  /** The check that failed; null when `ok`. */
  failure: ConsistencyFailure | null;
  /**
   * When false: the batch where the histories part, the hash the old checkpoint (or the chain
   * before it) holds for it, and the hash of what is served now (null when nothing is served for it).
   */
  batch: number | null;
  expected: string | null;
  served: string | null;
  /** Why not, as a sentence; null when `ok`. */
  reason: string | null;
  /** Receipts checked (with `{ from: 'checkpoint' }`, the old checkpoint's and those after it). */
  receipts: number;
}

/**
 * Where `verifyConsistency` starts its walk. `'genesis'` (the default): at batch 1, so the history
 * before the saved checkpoint is checked too; nothing about the caller is assumed.
 * `'checkpoint'`: at the saved checkpoint's batch, for a caller that has itself verified, with
 * keys that the keyring still holds, the whole history up to that very checkpoint (same batch
 * and hash) from batch 1 before: the receipt of that batch must still hash to its `hash`, and
 * the receipts after it are linked and signed up to the served checkpoint's.
 */
export interface ConsistencyOptions {
  from?: 'genesis' | 'checkpoint' | undefined;
}

/**
 * Check that the history served now extends the one a saved checkpoint stated, and that the
 * history before the checkpoint is the one it signed: both checkpoints are signed by keys of the
 * keyring, the new one is not behind the old one, and EVERY receipt from batch 1 to the new
 * checkpoint's, read through `range` (at most {@link CONSISTENCY_MAX_RECEIPTS} a call, as
 * `GET /api/receipts/consistency?from=&to=` serves them), is well formed, numbered without gaps,
 * chained by `prev` (64 zeros for batch 1) and signed; the receipt of the old checkpoint's batch
 * hashes to its `hash`, and the last one to the new checkpoint's.
 *
 * A checkpoint signs the hash of its newest receipt, which chains through every `prev` down to
 * batch 1, so the walk from batch 1 is what ties the history before the checkpoint to it: a
 * receipt changed there without being signed again fails its signature, one signed again fails
 * the next `prev`, two swapped fail both, and a history rewritten and re-chained up to the
 * checkpoint changes the hash of the checkpoint's batch. The verdict names the batch, with both
 * hashes where there are two. Cost: the whole chain, every time: `current.batch` receipts in
 * `ceil(current.batch / 1000)` reads, one Ed25519 verification and one SHA-256 each.
 * `svcctl receipts verify --since-checkpoint` (which remembers nothing between runs) runs this.
 *
 * With `{ from: 'checkpoint' }` the walk starts at the old checkpoint's batch instead
 * (`current.batch - old.batch + 1` receipts): that receipt must hash to the old `hash` (its own
 * `prev` is not checked: the hash covers it), and every later one is linked and signed as above.
 * This checks NOTHING below the old checkpoint: it is sound only for a caller that verified the
 * history up to that checkpoint from batch 1 itself, since the checkpoint's hash commits (through
 * the `prev` links) to exactly the history it verified, and is only as fresh as that check: a
 * receipt changed below the checkpoint since is caught by a walk from batch 1 (another
 * process, the CLI), not by this one. The SDK's `SvcClient` uses it for a checkpoint it verified
 * from batch 1 itself earlier in the same process (`verifyConsistency`, and `verifyRefund` with
 * a checkpoint store).
 */
export async function verifyConsistency(
  old: CheckpointFields,
  current: CheckpointFields,
  range: (from: number, to: number) => Promise<readonly ReceiptFields[]>,
  jwks: ReceiptJwksFields | ReceiptKeyring,
  options: ConsistencyOptions = {},
): Promise<ConsistencyVerdict> {
  const keyring = jwks instanceof ReceiptKeyring ? jwks : new ReceiptKeyring(jwks);
  let receipts = 0;
  const fail = (
    failure: ConsistencyFailure,
    batch: number | null,
    reason: string,
    expected: string | null = null,
    served: string | null = null,
  ): ConsistencyVerdict => ({
    ok: false,
    failure,
    batch,
    expected,
    served,
    reason,
    receipts,
  });
  for (const [name, c] of [
    ['the saved checkpoint', old],
    ['the served checkpoint', current],
  ] as const) {
    const shape = checkpointShapeProblem(c);
    if (shape !== null) return fail('checkpoint_malformed', null, `${name} is malformed (${shape})`);
    const sig = keyring.checkCheckpointSignature(c);
    if (sig !== null) return fail('checkpoint_signature', c.batch, `${name} of batch ${c.batch}: ${sig}`);
  }
  if (current.batch < old.batch) {
    return fail(
      'history_cut',
      old.batch,
      `the served history ends at batch ${current.batch}, before the saved checkpoint's batch ${old.batch}: it was cut and rewritten`,
      old.hash,
      null,
    );
  }
  // From the old checkpoint: its receipt's prev is the one link not checked (its hash, checked below, covers it).
  const start = options.from === 'checkpoint' ? old.batch : 1;
  let previous = GENESIS_PREV;
  for (let from = start; from <= current.batch; from += CONSISTENCY_MAX_RECEIPTS) {
    const to = Math.min(current.batch, from + CONSISTENCY_MAX_RECEIPTS - 1);
    const page = await range(from, to);
    if (page.length !== to - from + 1)
      return fail('receipts_missing', from, `the indexer served ${page.length} receipts for batches ${from} to ${to}`);
    for (const [i, r] of page.entries()) {
      const batch = from + i;
      const shape = receiptShapeProblem(r);
      if (shape !== null) return fail('receipt_malformed', batch, `batch ${batch}: malformed receipt (${shape})`);
      if (r.batch !== batch) return fail('receipt_out_of_place', batch, `batch ${batch}: the indexer served batch ${r.batch} in its place`);
      if ((batch > start || start === 1) && r.prev !== previous) {
        const what = batch === 1 ? 'the first receipt must have 64 zeros' : `batch ${batch - 1} or this one was changed`;
        return fail('receipt_link', batch, `batch ${batch}: prev does not link to the receipt before it (${what})`, previous, r.prev);
      }
      const sig = keyring.checkSignature(r);
      if (sig !== null) return fail('receipt_signature', batch, `batch ${batch}: ${sig}`);
      const hashed = receiptHash(r);
      if (batch === old.batch && hashed !== old.hash) {
        return fail(
          'saved_checkpoint_mismatch',
          batch,
          `batch ${batch} is not the one the saved checkpoint states: its hash was ${old.hash}, the served receipt's is ${hashed}`,
          old.hash,
          hashed,
        );
      }
      previous = hashed;
      receipts++;
    }
  }
  if (previous !== current.hash) {
    return fail(
      'served_checkpoint_mismatch',
      current.batch,
      `batch ${current.batch} is not the one the served checkpoint states`,
      current.hash,
      previous,
    );
  }
  return { ok: true, failure: null, batch: null, expected: null, served: null, reason: null, receipts };
}
