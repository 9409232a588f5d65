/**
 * The receipts family (`../receipts.ts` says what it guarantees), one class for both databases.
 * The receipts core (`ReceiptsCore`, given to the store) does every step between statements; only the SQL is here.
 */
import { inclusionPath, leafHash, rootOf, toHex, type Hash32 } from '../../../protocol/merkle';
import { canonicalCallId } from '../../../protocol/outcome';
import type { Checkpoint, Receipt, ReceiptJwks, ReceiptLeaf } from '../../../protocol/receipts';
import { leafCanonical } from '../../../protocol/receipts-verify';
import { SUBTREE_LEAVES, splitSubtrees } from '../../../protocol/receipt-tree';
import { sql, type Conn } from '../conn';
import {
  BACKFILLED_META,
  MissingReceiptError,
  ReissueError,
  type LeafRow,
  type PendingTree,
  type ProofLookup,
  type ProofPath,
  type ReceiptBatch,
  type ReceiptChain,
  type ReceiptKeyRow,
  type ReceiptsCore,
  type ReceiptsTable,
  type SignedReceipt,
} from '../receipts';
import { settled } from '../seam';

const COLUMNS = 'batch, v, prev, root, tree_size, refunds, premiums, settled_at, kid, sig';
const LEAF_COLUMNS = 'call_id, outcome, premium, refund, clamp';

export const Q = {
  insert: sql(
    `INSERT INTO receipts (${COLUMNS}, subtrees) VALUES (@batch, @v, @prev, @root, @tree_size, @refunds, @premiums, @settled_at, @kid, @sig, @subtrees)`,
  ),
  head: sql(`SELECT ${COLUMNS} FROM receipts ORDER BY batch DESC LIMIT 1`),
  get: sql(`SELECT ${COLUMNS} FROM receipts WHERE batch = ?`),
  page: sql(`SELECT ${COLUMNS} FROM receipts WHERE batch > ? ORDER BY batch LIMIT ?`),
  count: sql(`SELECT count(*) FROM receipts`),
  addKey: sql(`INSERT INTO receipt_keys (kid, x, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`),
  keys: sql(`SELECT kid, x FROM receipt_keys ORDER BY created_at DESC, kid`),
  // A call with what its proof needs: its batch's receipt (NULLs without one), run roots and
  // endpoint, and (with run roots) its leaf index: the count of the batch's calls before it.
  proofOf: sql(
    `SELECT s.batch_id AS settled_batch, r.batch, r.v, r.prev, r.root, r.tree_size, r.refunds, r.premiums, r.settled_at, r.kid, r.sig,
            r.subtrees, b.endpoint_id,
            CASE WHEN r.subtrees IS NULL THEN NULL ELSE (
              SELECT count(*) FROM settled_calls i
              WHERE i.batch_id = s.batch_id AND (i.received_at, i.call_id) < (s.received_at, s.call_id)) END AS leaf_index
     FROM outcome_records o LEFT JOIN settled_calls s ON s.call_id = o.call_id
       LEFT JOIN receipts r ON r.batch = s.batch_id LEFT JOIN settlement_batches b ON b.id = s.batch_id
     WHERE o.call_id = ?`,
  ),
  leaves: sql(`SELECT ${LEAF_COLUMNS} FROM settled_calls WHERE batch_id = ? ORDER BY received_at, call_id`),
  run: sql(`SELECT ${LEAF_COLUMNS} FROM settled_calls WHERE batch_id = ? ORDER BY received_at, call_id LIMIT ${SUBTREE_LEAVES} OFFSET ?`),
  batch: sql(`SELECT id, endpoint_id, created_at, refunds, premiums FROM settlement_batches WHERE id = ?`),
  /** The first batch after the head up to the one being appended: a gap. */
  gap: sql(`SELECT id FROM settlement_batches WHERE id > ? AND id <= ? ORDER BY id LIMIT 1`),
  after: sql(`SELECT id FROM settlement_batches WHERE id > ? ORDER BY id`),
  // Every batch without a receipt (one pass over the batches).
  missing: sql(
    `SELECT min(id) AS batch, count(*) AS count FROM settlement_batches b WHERE id < ?
       AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.batch = b.id)`,
  ),
  before: sql(`SELECT ${COLUMNS} FROM receipts WHERE batch < ? ORDER BY batch DESC LIMIT 1`),
  backfilled: sql(`SELECT 1 FROM meta WHERE name = '${BACKFILLED_META}'`),
  markBackfilled: sql(`INSERT INTO meta (name, value) VALUES ('${BACKFILLED_META}', 1) ON CONFLICT (name) DO NOTHING`),
};

/** Run `fn` in the caller's transaction, or else in one of its own under the writer lock. */
const serial = <T>(conn: Conn, fn: (conn: Conn) => Promise<T>): Promise<T> => (conn.inTransaction ? fn(conn) : conn.tx(fn, 'serial'));

export class SqlReceiptsTable implements ReceiptsTable {
  readonly enabled: boolean;

  constructor(
    private readonly conn: Conn,
    readonly core: ReceiptsCore,
  ) {
    this.enabled = core.enabled;
  }

  on(conn: Conn): SqlReceiptsTable {
    return new SqlReceiptsTable(conn, this.core);
  }

  async open(now: number): Promise<number> {
    const key = this.core.signing;
    await this.conn.run(Q.addKey, [key.kid, key.x, now]);
    if (!this.enabled) return 0;
    const plan = this.core.backfillPlan((await this.conn.value(Q.backfilled)) !== undefined);
    let written = 0;
    if (plan.fill) {
      written = await serial(this.conn, async (c) => {
        // Another process may have run it since the read above: the lock orders us after it.
        if ((await c.value(Q.backfilled)) !== undefined) return 0;
        let head = await c.get<Receipt>(Q.head);
        let n = 0;
        for (const id of await c.column<number>(Q.after, [head?.batch ?? 0])) {
          head = await signFromRows(c, this.core, (await c.get<ReceiptBatch>(Q.batch, [id]))!, head);
          n++;
        }
        await c.run(Q.markBackfilled);
        return n;
      });
    } else if (plan.markDatabase) {
      await this.conn.run(Q.markBackfilled);
    }
    if (plan.markDataDir) this.core.markDataDir(now, written);
    return written;
  }

  currentKid(): Promise<string> {
    return settled(() => this.core.kid);
  }

  append(batch: ReceiptBatch, tree: PendingTree, treeSize: number): Promise<Receipt> {
    return serial(this.conn, async (c) => store(c, (await this.on(c).chain(batch.id)).sign(batch, tree, treeSize)));
  }

  async chain(firstBatch: number): Promise<ReceiptChain> {
    let prev = await this.conn.get<Receipt>(Q.head);
    const gap = await this.conn.value<number>(Q.gap, [prev?.batch ?? 0, firstBatch - 1]);
    if (gap !== undefined) throw new MissingReceiptError(gap);
    return {
      sign: (batch, tree, treeSize) => {
        const signed = this.core.sign(batch, tree.result(), treeSize, prev);
        prev = signed.receipt;
        return signed;
      },
    };
  }

  async missing(): Promise<{ batch: number; count: number } | null> {
    if (!this.enabled) return null;
    const found = (await this.conn.get<{ batch: number | null; count: number }>(Q.missing, [Number.MAX_SAFE_INTEGER]))!;
    return found.batch === null ? null : { batch: found.batch, count: found.count };
  }

  reissue(batchId: number): Promise<Receipt> {
    return serial(this.conn, async (c) => {
      const batch = await c.get<ReceiptBatch>(Q.batch, [batchId]);
      if (batch === undefined) throw ReissueError.noBatch(batchId);
      if ((await c.get(Q.get, [batchId])) !== undefined) throw ReissueError.hasReceipt(batchId);
      const earlier = (await c.get<{ batch: number | null }>(Q.missing, [batchId]))!;
      if (earlier.batch !== null) throw ReissueError.earlierMissing(earlier.batch);
      return signFromRows(c, this.core, batch, await c.get<Receipt>(Q.before, [batchId]));
    });
  }

  prepareRotation(): Promise<{ kid: string; previous_kid: string }> {
    return settled(() => this.core.prepareRotation());
  }

  async publishPrepared(kid: string, now: number): Promise<void> {
    const key = this.core.prepared(kid);
    await this.conn.run(Q.addKey, [key.kid, key.x, now]);
  }

  activatePrepared(kid: string): Promise<void> {
    return settled(() => this.core.activatePrepared(kid));
  }

  async head(): Promise<Receipt | null> {
    return (await this.conn.get<Receipt>(Q.head)) ?? null;
  }

  checkpoint(head: Receipt): Promise<Checkpoint> {
    return settled(() => this.core.checkpoint(head));
  }

  async get(batch: number): Promise<Receipt | null> {
    return (await this.conn.get<Receipt>(Q.get, [batch])) ?? null;
  }

  page(after: number, limit: number): Promise<Receipt[]> {
    return this.conn.all<Receipt>(Q.page, [after, limit]);
  }

  async count(): Promise<number> {
    return (await this.conn.value<number>(Q.count))!;
  }

  async jwks(): Promise<ReceiptJwks> {
    return this.core.jwks(await this.conn.all<ReceiptKeyRow>(Q.keys));
  }

  async proof(id: string): Promise<ProofLookup> {
    const callId = canonicalCallId(id);
    if (callId === null) return { state: 'unknown' };
    return this.conn.tx(async (c): Promise<ProofLookup> => {
      const row = await c.get<ProofRow>(Q.proofOf, [callId]);
      if (row === undefined) return { state: 'unknown' };
      const { settled_batch: batch, subtrees, endpoint_id: endpointId, leaf_index: index, ...receipt } = row;
      if (batch === null) return { state: 'unsettled' };
      if (receipt.batch === null) return { state: 'unreceipted', batch };
      const found =
        (await this.proofFromRun(c, batch, endpointId!, callId, index, storedRuns(subtrees, receipt.root!))) ??
        proofInBatch(await this.leaves(c, batch), callId);
      return { state: 'settled', proof: { ...found, tree_size: receipt.tree_size!, receipt: receipt as Receipt } };
    }, 'read');
  }

  private async proofFromRun(
    c: Conn,
    batch: number,
    endpointId: string,
    callId: string,
    index: number | null,
    runs: Hash32[] | null,
  ): Promise<ProofPath | null> {
    if (runs === null || index === null) return null;
    const run = Math.floor(index / SUBTREE_LEAVES);
    const leaves = this.core.leaves(batch, endpointId, await c.all<LeafRow>(Q.run, [batch, run * SUBTREE_LEAVES]));
    const at = index - run * SUBTREE_LEAVES;
    // The rows must make the stored run's root, with the call where its index says; else the whole batch is hashed.
    if (run >= runs.length || leaves[at]?.call_id !== callId) return null;
    const inner = inclusionPath(leaves.map(hashLeaf), at);
    if (inner.root !== runs[run]) return null;
    const outer = inclusionPath(runs, run);
    return { leaf: leaves[at], leaf_index: index, audit_path: [...inner.path, ...outer.path].map(toHex) };
  }

  /** The leaves of one batch, in leaf order, as published (from the calls' rows). */
  private async leaves(c: Conn, batchId: number): Promise<ReceiptLeaf[]> {
    const batch = (await c.get<ReceiptBatch>(Q.batch, [batchId]))!;
    return this.core.leaves(batchId, batch.endpoint_id, await c.all<LeafRow>(Q.leaves, [batchId]));
  }
}

/** A call as `proof` reads it (`Q.proofOf`). */
type ProofRow = { [K in keyof Receipt]: Receipt[K] | null } & {
  settled_batch: number | null;
  subtrees: Buffer | null;
  endpoint_id: string | null;
  leaf_index: number | null;
};

/** Sign `batch` from its calls' rows as they are now, chained to `prev`, and store it. */
async function signFromRows(c: Conn, core: ReceiptsCore, batch: ReceiptBatch, prev: Receipt | undefined): Promise<Receipt> {
  return store(c, core.signRows(batch, await c.all<LeafRow>(Q.leaves, [batch.id]), prev));
}

async function store(c: Conn, signed: SignedReceipt): Promise<Receipt> {
  await c.run(Q.insert, { ...signed.receipt, subtrees: signed.subtrees });
  return signed.receipt;
}

const hashLeaf = (leaf: ReceiptLeaf): Hash32 => leafHash(leafCanonical(leaf));

/** The run roots stored with a receipt, if there are any and they make its `root`; else null. */
function storedRuns(stored: Buffer | null, root: string): Hash32[] | null {
  if (!stored) return null;
  const runs = splitSubtrees(stored);
  return toHex(rootOf(runs)) === root ? runs : null;
}

/** The proof of `callId` from every leaf of its batch. */
function proofInBatch(leaves: readonly ReceiptLeaf[], callId: string): ProofPath {
  const index = leaves.findIndex((l) => l.call_id === callId);
  const { path } = inclusionPath(leaves.map(hashLeaf), index);
  return { leaf: leaves[index]!, leaf_index: index, audit_path: path.map(toHex) };
}
