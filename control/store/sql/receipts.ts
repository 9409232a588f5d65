/**
 * The receipts family (`../receipts.ts` says what it guarantees), one class for both databases.
 * Every step between statements is `../receipts-core.ts`; only the SQL is here.
 */
import type { Hash32 } from '../../../protocol/merkle';
import { canonicalCallId } from '../../../protocol/outcome';
import { OpaqueIds } from '../../../protocol/opaque-ids';
import type { Checkpoint, Receipt, ReceiptJwks, ReceiptLeaf } from '../../../protocol/receipts';
import { SUBTREE_LEAVES } from '../../../protocol/receipt-tree';
import { backfillMarker } from '../backfill-marker';
import { sql, type Conn } from '../conn';
import type { ReceiptChain, ReceiptsTable } from '../receipts';
import {
  BACKFILLED_META,
  MissingReceiptError,
  ReceiptsCore,
  ReissueError,
  type LeafRow,
  type ProofLookup,
  type ProofPath,
  type ReceiptBatch,
  type ReceiptKeyRow,
  type SignedReceipt,
} from '../receipts-core';
import { settled } from '../seam';
import { ReceiptSigner, loadOrCreateSigner, rotateSigner } from '../signing-key';
import type { PendingTree, TreeHasher } from '../tree-hasher';

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

/**
 * The receipts' signer, hasher and provider ids for a store: the signing key of `dataDir`
 * (created on first open; null: an in-memory store, with a throwaway key and no backfill record).
 */
export function receiptsCore(dataDir: string | null, idSecret: Buffer, enabled: boolean, hasher?: TreeHasher): ReceiptsCore {
  const ids = new OpaqueIds(idSecret);
  return new ReceiptsCore({
    signer: dataDir === null ? ReceiptSigner.generate() : loadOrCreateSigner(dataDir).signer,
    providerId: (endpointId) => ids.provider(endpointId),
    rotateKey: () => (dataDir === null ? ReceiptSigner.generate() : rotateSigner(dataDir)),
    enabled,
    backfillMarker: dataDir === null ? null : backfillMarker(dataDir),
    ...(hasher === undefined ? {} : { hasher }),
  });
}

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
    return ReceiptsCore.missing((await this.conn.get<{ batch: number | null; count: number }>(Q.missing, [Number.MAX_SAFE_INTEGER]))!);
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
        (await this.proofFromRun(c, batch, endpointId!, callId, index, ReceiptsCore.runs(subtrees, receipt.root!))) ??
        ReceiptsCore.proofInBatch(await this.leaves(c, batch), callId);
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
    const rows = await c.all<LeafRow>(Q.run, [batch, ReceiptsCore.runOf(index).offset]);
    return this.core.proofInRun(batch, endpointId, callId, index, runs, rows);
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
