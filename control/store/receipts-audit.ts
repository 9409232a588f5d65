/**
 * The receipt invariants of `svcctl ledger verify` (docs/design.md §11), run after the ledger's own
 * checks in the same read transaction (`ledger-verify.ts`):
 *
 * 1. every batch has exactly one receipt that states its call count, refunds, premiums and
 *    time, the receipts chain in batch order from batch 1, and each is signed by a key in
 *    `receipt_keys` (the public verifier's own `ChainVerifier`, fed from the database);
 * 2. every receipt's root is the RFC 9162 root of its batch's calls as their rows say now
 *    (leaves in settlement order), so a call's amounts cannot be rewritten after the fact,
 *    however consistently the batch and ledger rows are rewritten with it; and the run roots
 *    stored for proofs (`protocol/receipt-tree.ts`) are those of the same calls.
 *
 * Each answers the first violation as a sentence naming the batch, or null. Each reads every
 * batch or every settled call, so it pages: keyset pages of {@link BATCH_PAGE} batches (by id)
 * or {@link CALL_PAGE} calls (by settlement order), all inside ONE read transaction (the
 * caller's, or its own), so a check sees one state however long it reads.
 */
import { sql, type Conn } from './conn';
import { rootOf, subtreeRoots, toHex, type Hash32 } from '../../protocol/merkle';
import type { Receipt } from '../../protocol/receipts';
import { ChainVerifier, ReceiptKeyring, leafHashOf } from '../../protocol/receipts-verify';
import type { Clamp } from '../../protocol/settlement';
import { NIL_CALL_ID, type Outcome } from '../../protocol/outcome';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { SUBTREE_HEIGHT } from '../../protocol/receipt-tree';
import { leafOf, type ReceiptKeyRow } from './receipts';

/** Batches read per page by the chain check. @default 1000 */
export const BATCH_PAGE = 1_000;
/** Settled calls read per page by the root check. @default 10000 */
export const CALL_PAGE = 10_000;

const RECEIPT_FIELDS = `'v', r.v, 'batch', r.batch, 'prev', r.prev, 'root', r.root, 'tree_size', r.tree_size, 'refunds', r.refunds,
  'premiums', r.premiums, 'settled_at', r.settled_at, 'kid', r.kid, 'sig', r.sig`;
const batches = (object: string) => `SELECT b.id, b.calls, b.refunds, b.premiums, b.created_at,
  CASE WHEN r.batch IS NULL THEN NULL ELSE ${object}(${RECEIPT_FIELDS}) END AS receipt
  FROM settlement_batches b LEFT JOIN receipts r ON r.batch = b.id WHERE b.id > ? ORDER BY b.id LIMIT ?`;

const Q = {
  keys: sql(`SELECT kid, x FROM receipt_keys`),
  // A receipt as JSON: text on SQLite, parsed by the driver on PostgreSQL.
  batches: sql({ sqlite: batches('json_object'), pg: batches('json_build_object') }),
  secret: sql(`SELECT secret FROM public_secret WHERE id = 1`),
  batch: sql(`SELECT b.endpoint_id, r.root, r.subtrees FROM settlement_batches b LEFT JOIN receipts r ON r.batch = b.id WHERE b.id = ?`),
  calls: sql(
    `SELECT batch_id AS settled_batch, call_id, outcome, premium, refund, clamp, received_at FROM settled_calls
     WHERE (batch_id, received_at, call_id) > (@batch, @received_at, @call_id)
     ORDER BY batch_id, received_at, call_id LIMIT @limit`,
  ),
};

/** A batch as check 1 reads it, with its receipt (or null). */
interface BatchWithReceipt<R = Receipt> {
  id: number;
  calls: number;
  refunds: number;
  premiums: number;
  created_at: number;
  receipt: R | null;
}

/** Check 1 over batches fed in batch order (each store reads them its own way). */
class ChainAudit {
  /** What is wrong with the published keys themselves, or null. */
  readonly keysProblem: string | null;
  private readonly chain: ChainVerifier;

  constructor(keys: readonly ReceiptKeyRow[]) {
    const keyring = new ReceiptKeyring({ keys: keys.map((k) => ({ kty: 'OKP', crv: 'Ed25519', x: k.x, kid: k.kid, use: 'sig' })) });
    this.keysProblem = keyring.problems.length > 0 ? `receipt keys: ${keyring.problems[0]}` : null;
    this.chain = new ChainVerifier(keyring);
  }

  /** The batch after the last one pushed: its violation, or null. */
  push(b: BatchWithReceipt): string | null {
    const r = b.receipt;
    if (r === null) return `batch ${b.id} has no receipt`;
    const differs: string[] = [];
    if (r.tree_size !== b.calls) differs.push(`tree_size ${r.tree_size} (the batch has ${b.calls} calls)`);
    if (r.refunds !== b.refunds) differs.push(`refunds ${r.refunds} (the batch has ${b.refunds})`);
    if (r.premiums !== b.premiums) differs.push(`premiums ${r.premiums} (the batch has ${b.premiums})`);
    if (r.settled_at !== new Date(b.created_at).toISOString()) differs.push(`settled_at ${r.settled_at}`);
    if (differs.length > 0) return `batch ${b.id}: its receipt states ${differs.join(', ')}`;
    return this.chain.push(r)?.reason ?? null;
  }
}

/** Check 1: one receipt per batch, matching it, chained and signed by a published key. */
export function receiptChainViolation(conn: Conn, pageSize = BATCH_PAGE): Promise<string | null> {
  return conn.tx(async (c) => {
    const audit = new ChainAudit(await c.all<ReceiptKeyRow>(Q.keys));
    if (audit.keysProblem !== null) return audit.keysProblem;
    for (let after = 0; ;) {
      const page = await c.all<BatchWithReceipt<Receipt | string>>(Q.batches, [after, pageSize]);
      for (const b of page) {
        const problem = audit.push({ ...b, receipt: typeof b.receipt === 'string' ? (JSON.parse(b.receipt) as Receipt) : b.receipt });
        if (problem !== null) return problem;
      }
      if (page.length < pageSize) return null;
      after = page[page.length - 1]!.id;
    }
  }, 'read');
}

/** Check 2: each receipt's root is the root of its batch's calls, recomputed from their rows. */
export function receiptRootViolation(conn: Conn, pageSize = CALL_PAGE): Promise<string | null> {
  return conn.tx(async (c) => {
    const secret = await c.value<Buffer>(Q.secret);
    if (secret === undefined) return null; // no store has opened this database yet: nothing settled
    const audit = new RootAudit(secret);
    // Batch ids start at 1: (0, 0, nil) is before every settled call.
    let after = { batch: 0, received_at: 0, call_id: NIL_CALL_ID };
    for (;;) {
      const page = await c.all<AuditLeafRow & { received_at: number }>(Q.calls, { ...after, limit: pageSize });
      for (const row of page) {
        if (row.settled_batch !== audit.current) {
          const problem = audit.next(row.settled_batch, await c.get<AuditBatch>(Q.batch, [row.settled_batch]));
          if (problem !== null) return problem;
        }
        audit.push(row);
      }
      if (page.length < pageSize) return audit.close();
      const last = page[page.length - 1]!;
      after = { batch: last.settled_batch, received_at: last.received_at, call_id: last.call_id };
    }
  }, 'read');
}

/** A settled call as check 2 reads it, in settlement order. */
interface AuditLeafRow {
  settled_batch: number;
  call_id: string;
  outcome: Outcome;
  premium: number;
  refund: number;
  clamp: Clamp | null;
}

/** What check 2 needs of a batch: its endpoint, and its receipt's root and run roots (null without a receipt). */
interface AuditBatch {
  endpoint_id: string;
  root: string | null;
  subtrees: Buffer | null;
}

/** Check 2 over settled calls fed in settlement order (batch, received_at, call_id). */
class RootAudit {
  private readonly ids: OpaqueIds;
  private batch = 0;
  private provider = '';
  private stated: string | null = null;
  private runs: Buffer | null = null;
  private hashes: Hash32[] = [];

  /** `secret`: the database's public id secret (the leaves name providers by opaque id). */
  constructor(secret: Buffer) {
    this.ids = new OpaqueIds(secret);
  }

  /** The batch whose calls are being fed. */
  get current(): number {
    return this.batch;
  }

  /** The calls of `batch` follow (`b` undefined: no such batch): the violation of the batch before, or null. */
  next(batch: number, b: AuditBatch | undefined): string | null {
    const problem = this.close();
    this.batch = batch;
    this.provider = b === undefined ? '' : this.ids.provider(b.endpoint_id);
    this.stated = b?.root ?? null;
    this.runs = b?.subtrees ?? null;
    this.hashes = [];
    return problem;
  }

  /** A call of the current batch, in settlement order. */
  push(row: AuditLeafRow): void {
    this.hashes.push(leafHashOf(leafOf(this.batch, this.provider, row)));
  }

  /** The current batch's violation, or null. */
  close(): string | null {
    if (this.batch === 0 || this.stated === null) return null;
    const computed = subtreeRoots(this.hashes, SUBTREE_HEIGHT);
    const root = toHex(rootOf(computed));
    if (root !== this.stated)
      return `batch ${this.batch}: its receipt's root ${this.stated} is not the root of its ${this.hashes.length} calls (${root})`;
    if (this.runs !== null && !this.runs.equals(Buffer.from(computed.join(''), 'latin1')))
      return `batch ${this.batch}: the run hashes stored for its proofs are not those of its calls`;
    return null;
  }
}
