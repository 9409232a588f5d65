/**
 * Whether the receipt history served now extends the one a saved checkpoint stated
 * (docs/design.md §11): `verifyConsistency`, on the receipt checks of `receipts-verify.ts`. Like
 * it, zod-free (node:crypto through `receipts-verify.ts` only), so the SDK ships this file as it is.
 */
import {
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

/** What `verifyConsistency` found. */
export interface ConsistencyVerdict {
  /** True when the served history leads from the old checkpoint to the new one unchanged. */
  ok: boolean;
  /**
   * When false: the batch where the histories part, the hash the old checkpoint (or the chain
   * before it) holds for it, and the hash of what is served now (null when nothing is served for it).
   */
  batch: number | null;
  expected: string | null;
  served: string | null;
  /** Why not, as a sentence; null when `ok`. */
  reason: string | null;
  /** Receipts checked. */
  receipts: number;
}

/**
 * Check that the history served now extends the one a saved checkpoint stated: both
 * checkpoints are signed by keys of the keyring, the new one is not behind the old one, and the
 * receipts from the old checkpoint's batch to the new one's, read through `range` (at most
 * {@link CONSISTENCY_MAX_RECEIPTS} a call, as `GET /api/receipts/consistency?from=&to=` serves
 * them), are each signed, numbered without gaps and chained by `prev`, the first hashing to the
 * old checkpoint's `hash` and the last to the new one's. A rewritten batch at or before the old
 * checkpoint changes the first hash (or, re-chained, a later `prev`): the verdict names the
 * batch and both hashes. `svcctl receipts verify --since-checkpoint` and the SDK's
 * `verifyConsistency` (and `verifyRefund` with a checkpoint store) run this.
 */
export async function verifyConsistency(
  old: CheckpointFields,
  current: CheckpointFields,
  range: (from: number, to: number) => Promise<readonly ReceiptFields[]>,
  jwks: ReceiptJwksFields | ReceiptKeyring,
): Promise<ConsistencyVerdict> {
  const keyring = jwks instanceof ReceiptKeyring ? jwks : new ReceiptKeyring(jwks);
  let receipts = 0;
  const fail = (
    batch: number | null,
    reason: string,
    expected: string | null = null,
    served: string | null = null,
  ): ConsistencyVerdict => ({
    ok: false,
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
    if (shape !== null) return fail(null, `${name} is malformed (${shape})`);
    const sig = keyring.checkCheckpointSignature(c);
    if (sig !== null) return fail(c.batch, `${name} of batch ${c.batch}: ${sig}`);
  }
  if (current.batch < old.batch) {
    return fail(
      old.batch,
      `the served history ends at batch ${current.batch}, before the saved checkpoint's batch ${old.batch}: it was cut and rewritten`,
      old.hash,
      null,
    );
  }
  let from = old.batch;
  let expected = old.hash;
  let first = true;
  for (;;) {
    const to = Math.min(current.batch, from + CONSISTENCY_MAX_RECEIPTS - 1);
    const page = await range(from, to);
    if (page.length !== to - from + 1) return fail(from, `the indexer served ${page.length} receipts for batches ${from} to ${to}`);
    for (const [i, r] of page.entries()) {
      const shape = receiptShapeProblem(r);
      if (shape !== null) return fail(from + i, `batch ${from + i}: malformed receipt (${shape})`);
      if (r.batch !== from + i) return fail(from + i, `batch ${from + i}: the indexer served batch ${r.batch} in its place`);
      const hashed = receiptHash(r);
      if (i === 0) {
        if (hashed !== expected) {
          return fail(
            r.batch,
            first
              ? `batch ${r.batch} is not the one the saved checkpoint states: its hash was ${expected}, the served receipt's is ${hashed}`
              : `batch ${r.batch} changed between two reads`,
            expected,
            hashed,
          );
        }
      } else if (r.prev !== expected) {
        return fail(
          r.batch,
          `batch ${r.batch}: prev does not link to batch ${r.batch - 1} (${r.prev}, expected ${expected})`,
          expected,
          r.prev,
        );
      }
      const sig = keyring.checkSignature(r);
      if (sig !== null) return fail(r.batch, `batch ${r.batch}: ${sig}`);
      expected = hashed;
      receipts++;
    }
    first = false;
    if (to === current.batch) break;
    from = to;
    receipts--; // the last receipt of a page is read again as the first of the next
  }
  if (expected !== current.hash) {
    return fail(current.batch, `batch ${current.batch} is not the one the served checkpoint states`, current.hash, expected);
  }
  return { ok: true, batch: null, expected: null, served: null, reason: null, receipts };
}
