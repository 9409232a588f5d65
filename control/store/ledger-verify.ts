/**
 * The ledger's invariants, checked in order against committed state in one read transaction
 * (`svcctl ledger verify`). The first violation found is reported as a sentence. Cost is
 * linear in outcomes and postings (a few seconds per million); it is an operator check, not a
 * hot path. The last two checks are the settlement receipts' (`receipts-audit.ts`).
 */
import type { Db } from './db';
import { COVERED_FAILURES } from '../../protocol/outcome';
import type { LedgerVerifyView } from '../../protocol/settlement';
import { receiptChainViolation, receiptRootViolation } from './receipts-audit';

const COVERED = [...COVERED_FAILURES].map((o) => `'${o}'`).join(', ');

interface Check {
  name: string;
  /** Returns a description of the first violation, or null. */
  run(db: Db): string | null;
}

/** A row of these checks' queries: SQLite text, numbers and NULLs (none of them selects a blob). */
type Row = Record<string, string | number | null>;

const first = (db: Db, sql: string): Row | undefined => db.prepare(sql).get() as Row | undefined;

/** The allowed sign of each account in each kind of transfer. */
const SHAPE = `CASE t.kind
    WHEN 'fund'         THEN (p.account = 'external' AND p.amount < 0) OR (p.account = 'pool' AND p.amount > 0)
    WHEN 'premium'      THEN (p.account LIKE 'key:%' AND p.amount < 0) OR (p.account = 'pool' AND p.amount > 0)
    WHEN 'treasury_fee' THEN (p.account = 'pool' AND p.amount < 0) OR (p.account = 'treasury' AND p.amount > 0)
    WHEN 'refund'       THEN (p.account = 'pool' AND p.amount < 0) OR (p.account LIKE 'key:%' AND p.amount > 0)
    WHEN 'payout'       THEN (p.account LIKE 'key:%' AND p.amount < 0) OR (p.account = 'external' AND p.amount > 0)
    ELSE 0 END`;

const CHECKS: Check[] = [
  {
    name: 'all balances sum to zero',
    run: (db) => {
      const sum = db.prepare(`SELECT coalesce(sum(balance), 0) FROM account_balances`).pluck().get() as number;
      return sum === 0 ? null : `account balances sum to ${sum}, not 0`;
    },
  },
  {
    name: "every transfer's postings sum to zero",
    run: (db) => {
      const bad = first(db, `SELECT transfer_id, sum(amount) AS total FROM ledger_postings GROUP BY transfer_id HAVING total <> 0 LIMIT 1`);
      if (bad) return `transfer ${bad.transfer_id}: postings sum to ${bad.total}, not 0`;
      const thin = first(
        db,
        `SELECT t.id, count(p.account) AS n FROM ledger_transfers t LEFT JOIN ledger_postings p ON p.transfer_id = t.id
         GROUP BY t.id HAVING n < 2 LIMIT 1`,
      );
      return thin ? `transfer ${thin.id} has ${thin.n} posting(s); a transfer needs at least 2` : null;
    },
  },
  {
    name: 'every posting moves money the way its transfer kind allows',
    run: (db) => {
      const bad = first(
        db,
        `SELECT t.id, t.kind, p.account, p.amount FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
         WHERE NOT (${SHAPE}) LIMIT 1`,
      );
      return bad ? `transfer ${bad.id} (${bad.kind}) posts ${bad.amount} to ${bad.account}` : null;
    },
  },
  {
    name: 'account balances equal the sums of their postings',
    run: (db) => {
      const bad = first(
        db,
        `WITH sums AS (SELECT account, sum(amount) AS total FROM ledger_postings GROUP BY account)
         SELECT b.account, b.balance, coalesce(s.total, 0) AS total FROM account_balances b LEFT JOIN sums s ON s.account = b.account
         WHERE b.balance <> coalesce(s.total, 0)
         UNION ALL
         SELECT s.account, NULL, s.total FROM sums s LEFT JOIN account_balances b ON b.account = s.account WHERE b.account IS NULL
         LIMIT 1`,
      );
      return bad ? `account ${bad.account}: balance ${bad.balance ?? '(none)'} but postings sum to ${bad.total}` : null;
    },
  },
  {
    name: 'no call settled twice',
    run: (db) => {
      const bad = first(
        db,
        `SELECT call_id, kind, count(*) AS n FROM ledger_transfers WHERE call_id IS NOT NULL GROUP BY call_id, kind HAVING n > 1 LIMIT 1`,
      );
      return bad ? `call ${bad.call_id} has ${bad.n} ${bad.kind} transfers` : null;
    },
  },
  {
    name: 'every settled call carries the amounts its outcome implies',
    run: (db) => {
      const bad = first(
        db,
        `SELECT call_id, problem FROM (
           SELECT call_id, CASE
             WHEN premium IS NULL OR refund IS NULL OR refund_owed IS NULL THEN 'settled without amounts'
             WHEN premium < 0 OR refund < 0 OR refund_owed < 0 THEN 'a negative amount'
             WHEN key_id IS NULL AND (premium <> 0 OR refund_owed <> 0 OR clamp IS NOT NULL) THEN 'money moved for a keyless call'
             WHEN outcome <> 'ok' AND premium <> 0 THEN 'a premium on a ' || outcome || ' call'
             WHEN outcome NOT IN (${COVERED}) AND refund_owed <> 0 THEN 'a refund owed on a ' || outcome || ' call'
             WHEN refund > refund_owed THEN 'a refund above what was owed'
             WHEN (clamp IS NULL) <> (refund = refund_owed) THEN 'a clamp that does not match its refund'
           END AS problem
           FROM outcomes WHERE settled_batch IS NOT NULL
         ) WHERE problem IS NOT NULL LIMIT 1`,
      );
      if (bad) return `call ${bad.call_id}: ${bad.problem}`;
      const early = first(
        db,
        `SELECT call_id FROM outcomes WHERE settled_batch IS NULL
           AND (premium IS NOT NULL OR refund IS NOT NULL OR refund_owed IS NOT NULL OR clamp IS NOT NULL) LIMIT 1`,
      );
      return early ? `call ${early.call_id} carries amounts but is not settled` : null;
    },
  },
  {
    name: 'every batch equals the sum of its calls',
    run: (db) => {
      const bad = first(
        db,
        `WITH o AS (
           SELECT settled_batch AS id, count(*) AS calls, sum(premium) AS premiums, sum(refund) AS refunds,
                  sum(refund_owed) AS refunds_owed, sum(clamp IS NOT NULL) AS clamped, min(endpoint_id) AS e1, max(endpoint_id) AS e2
           FROM outcomes WHERE settled_batch IS NOT NULL GROUP BY settled_batch)
         SELECT b.id FROM settlement_batches b LEFT JOIN o ON o.id = b.id
         WHERE o.id IS NULL OR o.calls <> b.calls OR o.premiums <> b.premiums OR o.refunds <> b.refunds
            OR o.refunds_owed <> b.refunds_owed OR o.clamped <> b.clamped_calls OR o.e1 <> b.endpoint_id OR o.e2 <> b.endpoint_id
         LIMIT 1`,
      );
      return bad ? `batch ${bad.id} does not match the calls settled in it` : null;
    },
  },
  {
    name: "every batch's ledger entries equal its calls' premiums, refunds and fees",
    run: (db) => {
      const bad = first(
        db,
        `WITH expected AS (
           SELECT settled_batch AS batch, 'key:' || key_id AS account, sum(premium) AS premiums, sum(refund) AS refunds
           FROM outcomes WHERE settled_batch IS NOT NULL AND key_id IS NOT NULL
           GROUP BY settled_batch, key_id HAVING premiums > 0 OR refunds > 0),
         actual AS (
           SELECT t.batch_id AS batch, p.account,
                  sum(CASE WHEN t.kind = 'premium' THEN -p.amount ELSE 0 END) AS premiums,
                  sum(CASE WHEN t.kind = 'refund' THEN p.amount ELSE 0 END) AS refunds
           FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
           WHERE t.kind IN ('premium', 'refund') AND p.account LIKE 'key:%'
           GROUP BY t.batch_id, p.account)
         SELECT e.batch, e.account FROM expected e LEFT JOIN actual a ON a.batch IS e.batch AND a.account = e.account
         WHERE a.account IS NULL OR a.premiums <> e.premiums OR a.refunds <> e.refunds
         UNION ALL
         SELECT a.batch, a.account FROM actual a LEFT JOIN expected e ON e.batch IS a.batch AND e.account = a.account
         WHERE e.account IS NULL
         LIMIT 1`,
      );
      if (bad) return `batch ${bad.batch ?? '(none)'}: ledger entries for ${bad.account} do not match its calls`;
      const fee = first(
        db,
        `WITH fees AS (
           SELECT t.batch_id, sum(p.amount) AS total FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
           WHERE t.kind = 'treasury_fee' AND p.account = 'treasury' GROUP BY t.batch_id)
         SELECT b.id FROM settlement_batches b LEFT JOIN fees f ON f.batch_id = b.id
         WHERE coalesce(f.total, 0) <> b.treasury_fees
         UNION ALL
         SELECT f.batch_id FROM fees f LEFT JOIN settlement_batches b ON b.id = f.batch_id WHERE b.id IS NULL
         LIMIT 1`,
      );
      return fee ? `batch ${fee.id ?? '(none)'}: treasury fee entries do not match the batch` : null;
    },
  },
  {
    name: 'the pool never went negative',
    run: (db) => {
      const low = db
        .prepare(
          `SELECT min(running) FROM (
             SELECT sum(amount) OVER (ORDER BY transfer_id ROWS UNBOUNDED PRECEDING) AS running
             FROM ledger_postings WHERE account = 'pool')`,
        )
        .pluck()
        .get() as number | null;
      return low !== null && low < 0 ? `the pool's running balance reached ${low}` : null;
    },
  },
  {
    name: 'every batch has one receipt that states it, signed by a published key and chained to the one before',
    run: receiptChainViolation,
  },
  {
    name: "every receipt's root is the Merkle root of its batch's calls as recorded",
    run: receiptRootViolation,
  },
];

export function verifyLedger(db: Db): LedgerVerifyView {
  return db.transaction((): LedgerVerifyView => {
    let violation: string | null = null;
    for (const check of CHECKS) {
      violation = check.run(db);
      if (violation !== null) break;
    }
    const count = (sql: string) => db.prepare(sql).pluck().get() as number;
    return {
      ok: violation === null,
      violation,
      checks: CHECKS.map((c) => c.name),
      counts: {
        accounts: count(`SELECT count(*) FROM account_balances`),
        transfers: count(`SELECT count(*) FROM ledger_transfers`),
        postings: count(`SELECT count(*) FROM ledger_postings`),
        batches: count(`SELECT count(*) FROM settlement_batches`),
        settled_calls: count(`SELECT coalesce(sum(calls), 0) FROM settlement_batches`),
      },
    };
  })();
}
