/**
 * The receipt invariants of `ledger verify` on PostgreSQL (`../receipts-audit.ts` says what
 * they are; the checks themselves, `ChainAudit` and `RootAudit`, are shared). Each reads every
 * batch or every settled call, so it pages: keyset pages of {@link BATCH_PAGE} batches (by id)
 * or {@link CALL_PAGE} calls (by settlement order), all inside ONE `REPEATABLE READ`
 * transaction (the caller's, or its own), so a check sees one state however long it reads.
 */
import { NIL_CALL_ID } from '../../../protocol/outcome';
import type { Receipt } from '../../../protocol/receipts';
import type { ReceiptKeyRow } from '../receipts-core';
import { ChainAudit, RootAudit, type AuditBatch, type AuditLeafRow, type BatchWithReceipt } from '../receipts-audit';
import { sql, type PgConn } from './conn';

/** Batches read per page by the chain check. @default 1000 */
export const BATCH_PAGE = 1_000;
/** Settled calls read per page by the root check. @default 10000 */
export const CALL_PAGE = 10_000;

const Q = {
  keys: sql(`SELECT kid, x FROM receipt_keys`),
  batches: sql(
    `SELECT b.id, b.calls, b.refunds, b.premiums, b.created_at,
            CASE WHEN r.batch IS NULL THEN NULL ELSE json_build_object(
              'v', r.v, 'batch', r.batch, 'prev', r.prev, 'root', r.root, 'tree_size', r.tree_size, 'refunds', r.refunds,
              'premiums', r.premiums, 'settled_at', r.settled_at, 'kid', r.kid, 'sig', r.sig) END AS receipt
     FROM settlement_batches b LEFT JOIN receipts r ON r.batch = b.id WHERE b.id > ? ORDER BY b.id LIMIT ?`,
  ),
  secret: sql(`SELECT secret FROM public_secret WHERE id = 1`),
  batch: sql(`SELECT b.endpoint_id, r.root, r.subtrees FROM settlement_batches b LEFT JOIN receipts r ON r.batch = b.id WHERE b.id = ?`),
  calls: sql(
    `SELECT batch_id AS settled_batch, call_id, outcome, premium, refund, clamp, received_at FROM settled_calls
     WHERE (batch_id, received_at, call_id) > (@batch, @received_at, @call_id)
     ORDER BY batch_id, received_at, call_id LIMIT @limit`,
  ),
};

/** Check 1: one receipt per batch, matching it, chained and signed by a published key. */
export function receiptChainViolation(conn: PgConn, pageSize = BATCH_PAGE): Promise<string | null> {
  return conn.tx(async (c) => {
    const audit = new ChainAudit(await c.all<ReceiptKeyRow>(Q.keys));
    if (audit.keysProblem !== null) return audit.keysProblem;
    for (let after = 0; ;) {
      const page = await c.all<BatchWithReceipt<Receipt>>(Q.batches, [after, pageSize]);
      for (const b of page) {
        const problem = audit.push(b);
        if (problem !== null) return problem;
      }
      if (page.length < pageSize) return null;
      after = page[page.length - 1]!.id;
    }
  }, 'read');
}

/** Check 2: each receipt's root is the root of its batch's calls, recomputed from their rows. */
export function receiptRootViolation(conn: PgConn, pageSize = CALL_PAGE): Promise<string | null> {
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
