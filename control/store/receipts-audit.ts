/**
 * The receipt invariants of `svcctl ledger verify` (DESIGN §11), run after the ledger's own
 * checks in the same read transaction (`ledger-verify.ts`):
 *
 * 1. every batch has exactly one receipt that states its call count, refunds, premiums and
 *    time, the receipts chain in batch order from batch 1, and each is signed by a key in
 *    `receipt_keys` (the public verifier's own `ChainVerifier`, fed from the database);
 * 2. every receipt's root is the RFC 9162 root of its batch's calls as their rows say now
 *    (leaves in settlement order), so a call's amounts cannot be rewritten after the fact,
 *    however consistently the batch and ledger rows are rewritten with it; and the run roots
 *    stored for proofs (`control/receipts/tree.ts`) are those of the same calls.
 *
 * Each answers the first violation as a sentence naming the batch, or null.
 */
import type { Db } from './db';
import { rootOf, subtreeRoots, toHex, type Hash32 } from '../../protocol/merkle';
import type { Receipt, ReceiptJwk } from '../../protocol/receipts';
import { ChainVerifier, ReceiptKeyring, leafHashOf } from '../../protocol/receipts-verify';
import type { Clamp } from '../../protocol/settlement';
import type { Outcome } from '../../protocol/outcome';
import { OpaqueIds } from '../public/ids';
import { SUBTREE_HEIGHT } from '../receipts/tree';
import { leafOf } from './receipts';

interface BatchWithReceipt {
  id: number;
  calls: number;
  refunds: number;
  premiums: number;
  created_at: number;
  receipt: string | null;
}

/** Check 1: one receipt per batch, matching it, chained and signed by a published key. */
export function receiptChainViolation(db: Db): string | null {
  const keys = (db.prepare(`SELECT kid, x FROM receipt_keys`).all() as { kid: string; x: string }[]).map((k): ReceiptJwk => ({
    kty: 'OKP',
    crv: 'Ed25519',
    x: k.x,
    kid: k.kid,
    use: 'sig',
  }));
  const keyring = new ReceiptKeyring({ keys });
  if (keyring.problems.length > 0) return `receipt keys: ${keyring.problems[0]}`;
  const chain = new ChainVerifier(keyring);
  const rows = db
    .prepare(
      `SELECT b.id, b.calls, b.refunds, b.premiums, b.created_at,
              CASE WHEN r.batch IS NULL THEN NULL ELSE json_object(
                'v', r.v, 'batch', r.batch, 'prev', r.prev, 'root', r.root, 'tree_size', r.tree_size, 'refunds', r.refunds,
                'premiums', r.premiums, 'settled_at', r.settled_at, 'kid', r.kid, 'sig', r.sig) END AS receipt
       FROM settlement_batches b LEFT JOIN receipts r ON r.batch = b.id ORDER BY b.id`,
    )
    .iterate() as IterableIterator<BatchWithReceipt>;
  for (const b of rows) {
    if (b.receipt === null) return `batch ${b.id} has no receipt`;
    const r = JSON.parse(b.receipt) as Receipt;
    const differs: string[] = [];
    if (r.tree_size !== b.calls) differs.push(`tree_size ${r.tree_size} (the batch has ${b.calls} calls)`);
    if (r.refunds !== b.refunds) differs.push(`refunds ${r.refunds} (the batch has ${b.refunds})`);
    if (r.premiums !== b.premiums) differs.push(`premiums ${r.premiums} (the batch has ${b.premiums})`);
    if (r.settled_at !== new Date(b.created_at).toISOString()) differs.push(`settled_at ${r.settled_at}`);
    if (differs.length > 0) return `batch ${b.id}: its receipt states ${differs.join(', ')}`;
    const problem = chain.push(r);
    if (problem !== null) return problem.reason;
  }
  return null;
}

interface LeafRow {
  settled_batch: number;
  call_id: string;
  outcome: Outcome;
  premium: number;
  refund: number;
  clamp: Clamp | null;
}

/** Check 2: each receipt's root is the root of its batch's calls, recomputed from their rows. */
export function receiptRootViolation(db: Db): string | null {
  const secret = db.prepare(`SELECT secret FROM public_secret WHERE id = 1`).pluck().get() as Buffer | undefined;
  if (secret === undefined) return null; // no store has opened this database yet: nothing settled
  const ids = new OpaqueIds(secret);
  const batchStmt = db.prepare(
    `SELECT b.endpoint_id, r.root, r.subtrees FROM settlement_batches b LEFT JOIN receipts r ON r.batch = b.id WHERE b.id = ?`,
  );
  const rows = db
    .prepare(
      `SELECT settled_batch, call_id, outcome, premium, refund, clamp FROM outcomes
       WHERE settled_batch IS NOT NULL ORDER BY settled_batch, received_at, call_id`,
    )
    .iterate() as IterableIterator<LeafRow>;

  let batch = 0;
  let provider = '';
  let stated: string | null = null;
  let runs: Buffer | null = null;
  let hashes: Hash32[] = [];
  const close = (): string | null => {
    if (batch === 0 || stated === null) return null;
    const computed = subtreeRoots(hashes, SUBTREE_HEIGHT);
    const root = toHex(rootOf(computed));
    if (root !== stated) return `batch ${batch}: its receipt's root ${stated} is not the root of its ${hashes.length} calls (${root})`;
    if (runs !== null && !runs.equals(Buffer.from(computed.join(''), 'latin1')))
      return `batch ${batch}: the run hashes stored for its proofs are not those of its calls`;
    return null;
  };
  for (const row of rows) {
    if (row.settled_batch !== batch) {
      const problem = close();
      if (problem !== null) return problem;
      batch = row.settled_batch;
      const b = batchStmt.get(batch) as { endpoint_id: string; root: string | null; subtrees: Buffer | null } | undefined;
      provider = b === undefined ? '' : ids.provider(b.endpoint_id);
      stated = b?.root ?? null;
      runs = b?.subtrees ?? null;
      hashes = [];
    }
    hashes.push(leafHashOf(leafOf(batch, provider, row)));
  }
  return close();
}
