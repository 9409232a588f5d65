/**
 * `ledger verify` on PostgreSQL: the same checks, in the same order, with the same sentences
 * (`../ledger-verify.ts`'s `LEDGER_CHECKS`, whose queries both dialects run), in one
 * `REPEATABLE READ` transaction (the caller's, or its own), so every check sees one state. The
 * receipts' checks are `../receipts-audit.ts`'s, which read in that same transaction.
 */
import type { LedgerVerifyView } from '../../../protocol/settlement';
import { LEDGER_CHECKS, VERIFY_COUNTS, verifyView, type VerifyRow } from '../ledger-verify';
import { sql, type PgConn, type Sql } from './conn';
import { receiptChainViolation, receiptRootViolation } from '../receipts-audit';

/** Each check's probes, compiled once. */
const PROBES: readonly (readonly { statement: Sql; message: (row: VerifyRow) => string }[] | null)[] = LEDGER_CHECKS.map((check) =>
  'probes' in check ? check.probes.map((p) => ({ statement: sql(p.sql), message: p.message })) : null,
);

const COUNTS = {
  accounts: sql(VERIFY_COUNTS.accounts),
  transfers: sql(VERIFY_COUNTS.transfers),
  postings: sql(VERIFY_COUNTS.postings),
  batches: sql(VERIFY_COUNTS.batches),
  settled_calls: sql(VERIFY_COUNTS.settled_calls),
};

const RECEIPT_CHECKS = { chain: receiptChainViolation, root: receiptRootViolation };

/** The first violation of the checks, or null. */
async function firstViolation(c: PgConn): Promise<string | null> {
  for (const [i, check] of LEDGER_CHECKS.entries()) {
    if ('receipts' in check) {
      const violation = await RECEIPT_CHECKS[check.receipts](c);
      if (violation !== null) return violation;
      continue;
    }
    for (const probe of PROBES[i]!) {
      const row = await c.get<VerifyRow>(probe.statement);
      if (row !== undefined) return probe.message(row);
    }
  }
  return null;
}

/** Check every ledger invariant against committed state, in one read snapshot. */
export function pgVerifyLedger(conn: PgConn): Promise<LedgerVerifyView> {
  return conn.tx(async (c) => {
    const violation = await firstViolation(c);
    const count = async (statement: Sql) => (await c.value<number>(statement))!;
    return verifyView(violation, {
      accounts: await count(COUNTS.accounts),
      transfers: await count(COUNTS.transfers),
      postings: await count(COUNTS.postings),
      batches: await count(COUNTS.batches),
      settled_calls: await count(COUNTS.settled_calls),
    });
  }, 'read');
}
