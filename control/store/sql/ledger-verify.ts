/**
 * The ledger's invariants, checked in order against committed state in one read transaction
 * (`svcctl ledger verify`). The first violation found is reported as a sentence. Cost is
 * linear in outcomes and postings (a few seconds per million); it is an operator check, not a
 * hot path. The last two checks are the settlement receipts' (`receipts-audit.ts`).
 *
 * The checks are one list, {@link LEDGER_CHECKS}, for every store: each ledger check's
 * queries are written in the SQL that SQLite and PostgreSQL both run (no alias in HAVING,
 * `IS NOT DISTINCT FROM`, `count(x)` for a count of non-nulls, an alias on every subquery),
 * run in one `REPEATABLE READ` (PostgreSQL) or read (SQLite) transaction, the caller's or its
 * own, so every check sees one state.
 */
import { COVERED_FAILURES } from '../../../protocol/outcome';
import type { LedgerVerifyView } from '../../../protocol/settlement';
import { sql, type Conn } from '../conn';
import { receiptChainViolation, receiptRootViolation } from '../receipts-audit';
import { POSITION_PROBES, shareViolation } from '../lp-audit';
import { HELD_OF, RESERVED_OF } from './budgets';

const COVERED = [...COVERED_FAILURES].map((o) => `'${o}'`).join(', ');

/**
 * A row of a check's query: text, numbers and NULLs (none of them selects a blob). A sum may be
 * a numeric string on PostgreSQL; the messages print it as it is.
 */
export type VerifyRow = Record<string, string | number | null>;

/** A query whose first row, if any, is a violation, and the sentence that describes it. */
interface Probe {
  readonly sql: string;
  readonly message: (row: VerifyRow) => string;
}

/**
 * One invariant: either its probes, run in order until one finds a row, or one of the
 * receipts' checks (`RECEIPT_CHECKS`).
 */
type LedgerCheck = { readonly name: string } & (
  { readonly probes: readonly Probe[] } | { readonly receipts: 'chain' | 'root' } | { readonly capital: 'shares' | 'locked' }
);

/**
 * The receipts' checks (`receipts-audit.ts`), each run on the verifying transaction's
 * connection: the first violation it finds, or null.
 */
const RECEIPT_CHECKS: Record<'chain' | 'root', (conn: Conn) => Promise<string | null>> = {
  chain: (c) => receiptChainViolation(c),
  root: (c) => receiptRootViolation(c),
};

/** A key's or an account's ledger account (`account:<id>` holds the money since migration 21; `key:<id>` before). */
const HOLDER = (p: string) => `(${p}.account LIKE 'key:%' OR ${p}.account LIKE 'account:%')`;

/** The account id a key without a row would have had (`ownAccountId`, `../keys.ts`), in SQL. */
const OWN_ACCOUNT = (keyId: string) =>
  `CASE WHEN substr(${keyId}, 1, 4) = 'key_' THEN 'acc_' || substr(${keyId}, 5) ELSE 'acc_' || ${keyId} END`;

/** The allowed sign of each account in each kind of transfer. */
const SHAPE = `CASE t.kind
    WHEN 'fund'         THEN (p.account = 'external' AND p.amount < 0) OR (p.account = 'pool' AND p.amount > 0)
    WHEN 'premium'      THEN (${HOLDER('p')} AND p.amount < 0) OR (p.account = 'pool' AND p.amount > 0)
    WHEN 'treasury_fee' THEN (p.account = 'pool' AND p.amount < 0) OR (p.account = 'treasury' AND p.amount > 0)
    WHEN 'refund'       THEN (p.account = 'pool' AND p.amount < 0) OR (${HOLDER('p')} AND p.amount > 0)
    WHEN 'payout'       THEN (${HOLDER('p')} AND p.amount < 0) OR (p.account = 'external' AND p.amount > 0)
    WHEN 'deposit'      THEN (p.account = 'external' AND p.amount < 0) OR (p.account LIKE 'account:%' AND p.amount > 0)
    WHEN 'refill'       THEN (p.account = 'external' AND p.amount < 0) OR (p.account LIKE 'account:%' AND p.amount > 0)
    WHEN 'move'         THEN ${HOLDER('p')}
    WHEN 'lp_deposit'   THEN (p.account = 'external' AND p.amount < 0) OR (p.account = 'pool' AND p.amount > 0)
    WHEN 'lp_withdrawal' THEN (p.account = 'pool' AND p.amount < 0) OR (p.account = 'external' AND p.amount > 0)
    ELSE FALSE END`;

const LEDGER_CHECKS: readonly LedgerCheck[] = [
  {
    name: 'all balances sum to zero',
    probes: [
      {
        sql: `SELECT total FROM (SELECT coalesce(sum(balance), 0) AS total FROM account_balances) AS s WHERE total <> 0`,
        message: (r) => `account balances sum to ${r.total}, not 0`,
      },
    ],
  },
  {
    name: "every transfer's postings sum to zero",
    probes: [
      {
        sql: `SELECT transfer_id, sum(amount) AS total FROM ledger_postings GROUP BY transfer_id HAVING sum(amount) <> 0 LIMIT 1`,
        message: (r) => `transfer ${r.transfer_id}: postings sum to ${r.total}, not 0`,
      },
      {
        sql: `SELECT t.id, count(p.account) AS n FROM ledger_transfers t LEFT JOIN ledger_postings p ON p.transfer_id = t.id
              GROUP BY t.id HAVING count(p.account) < 2 LIMIT 1`,
        message: (r) => `transfer ${r.id} has ${r.n} posting(s); a transfer needs at least 2`,
      },
    ],
  },
  {
    name: 'every posting moves money the way its transfer kind allows',
    probes: [
      {
        sql: `SELECT t.id, t.kind, p.account, p.amount FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
              WHERE NOT (${SHAPE}) LIMIT 1`,
        message: (r) => `transfer ${r.id} (${r.kind}) posts ${r.amount} to ${r.account}`,
      },
    ],
  },
  {
    name: 'account balances equal the sums of their postings',
    probes: [
      {
        sql: `WITH sums AS (SELECT account, sum(amount) AS total FROM ledger_postings GROUP BY account)
              SELECT b.account, b.balance, coalesce(s.total, 0) AS total FROM account_balances b LEFT JOIN sums s ON s.account = b.account
              WHERE b.balance <> coalesce(s.total, 0)
              UNION ALL
              SELECT s.account, NULL, s.total FROM sums s LEFT JOIN account_balances b ON b.account = s.account WHERE b.account IS NULL
              LIMIT 1`,
        message: (r) => `account ${r.account}: balance ${r.balance ?? '(none)'} but postings sum to ${r.total}`,
      },
    ],
  },
  {
    name: 'no call settled twice',
    probes: [
      {
        sql: `SELECT call_id, kind, count(*) AS n FROM ledger_transfers WHERE call_id IS NOT NULL
              GROUP BY call_id, kind HAVING count(*) > 1 LIMIT 1`,
        message: (r) => `call ${r.call_id} has ${r.n} ${r.kind} transfers`,
      },
    ],
  },
  {
    name: 'every settled call carries the amounts its outcome implies',
    probes: [
      {
        sql: `SELECT call_id, problem FROM (
                SELECT call_id, CASE
                  WHEN premium < 0 OR refund < 0 OR refund_owed < 0 THEN 'a negative amount'
                  WHEN key_id IS NULL AND (premium <> 0 OR refund_owed <> 0 OR clamp IS NOT NULL) THEN 'money moved for a keyless call'
                  WHEN outcome <> 'ok' AND premium <> 0 THEN 'a premium on a ' || outcome || ' call'
                  WHEN outcome NOT IN (${COVERED}) AND refund_owed <> 0 THEN 'a refund owed on a ' || outcome || ' call'
                  WHEN refund > refund_owed THEN 'a refund above what was owed'
                  WHEN (clamp IS NULL) <> (refund = refund_owed) THEN 'a clamp that does not match its refund'
                END AS problem
                FROM settled_calls
              ) AS c WHERE problem IS NOT NULL LIMIT 1`,
        message: (r) => `call ${r.call_id}: ${r.problem}`,
      },
      // A settled call's own copy of its outcome's facts (what its leaf and the checks above read).
      {
        sql: `SELECT s.call_id FROM settled_calls s LEFT JOIN outcome_records o ON o.call_id = s.call_id
              WHERE o.call_id IS NULL OR o.endpoint_id <> s.endpoint_id OR o.key_id IS DISTINCT FROM s.key_id
                 OR o.outcome <> s.outcome OR o.started_at <> s.started_at OR o.received_at <> s.received_at
              LIMIT 1`,
        message: (r) => `call ${r.call_id} is settled as a call its outcome record does not describe`,
      },
      {
        sql: `SELECT q.call_id, CASE WHEN s.call_id IS NOT NULL THEN 'is settled and still waiting to be'
                                     ELSE 'waits to be settled as a call its outcome record does not describe' END AS problem
              FROM unsettled_outcomes q LEFT JOIN outcome_records o ON o.call_id = q.call_id
                LEFT JOIN settled_calls s ON s.call_id = q.call_id
              WHERE s.call_id IS NOT NULL OR o.call_id IS NULL OR o.endpoint_id <> q.endpoint_id
                 OR o.key_id IS DISTINCT FROM q.key_id OR o.outcome <> q.outcome OR o.started_at <> q.started_at
                 OR o.received_at <> q.received_at OR o.reserved IS DISTINCT FROM q.reserved
              LIMIT 1`,
        message: (r) => `call ${r.call_id} ${r.problem}`,
      },
      {
        sql: `SELECT o.call_id FROM outcome_records o
              WHERE NOT EXISTS (SELECT 1 FROM settled_calls s WHERE s.call_id = o.call_id)
                AND NOT EXISTS (SELECT 1 FROM unsettled_outcomes q
                                WHERE q.endpoint_id = o.endpoint_id AND q.received_at = o.received_at AND q.call_id = o.call_id)
              LIMIT 1`,
        message: (r) => `call ${r.call_id} is neither settled nor waiting to be`,
      },
    ],
  },
  {
    name: 'every batch equals the sum of its calls',
    probes: [
      {
        // PostgreSQL's schema leaves this reference unchecked (its migration 9 says why).
        sql: `SELECT s.call_id, s.batch_id FROM settled_calls s LEFT JOIN settlement_batches b ON b.id = s.batch_id
              WHERE b.id IS NULL LIMIT 1`,
        message: (r) => `call ${r.call_id} is settled in batch ${r.batch_id}, which does not exist`,
      },
      {
        sql: `WITH o AS (
                SELECT batch_id AS id, count(*) AS calls, sum(premium) AS premiums, sum(refund) AS refunds,
                       sum(refund_owed) AS refunds_owed, count(clamp) AS clamped, min(endpoint_id) AS e1, max(endpoint_id) AS e2
                FROM settled_calls GROUP BY batch_id)
              SELECT b.id FROM settlement_batches b LEFT JOIN o ON o.id = b.id
              WHERE o.id IS NULL OR o.calls <> b.calls OR o.premiums <> b.premiums OR o.refunds <> b.refunds
                 OR o.refunds_owed <> b.refunds_owed OR o.clamped <> b.clamped_calls OR o.e1 <> b.endpoint_id OR o.e2 <> b.endpoint_id
              LIMIT 1`,
        message: (r) => `batch ${r.id} does not match the calls settled in it`,
      },
    ],
  },
  {
    name: "every batch's ledger entries equal its calls' premiums, refunds and fees",
    probes: [
      {
        // Both sides per account: a call counts for its key's account, and a posting to `key:<id>`
        // (batches settled before accounts held the money) for that key's account. A key with no
        // row counts for the account it would have had (`ownAccountId`), as the settler posts it.
        sql: `WITH expected AS (
                SELECT s.batch_id AS batch, 'account:' || coalesce(k.account_id, ${OWN_ACCOUNT('s.key_id')}) AS account,
                       sum(s.premium) AS premiums, sum(s.refund) AS refunds
                FROM settled_calls s LEFT JOIN keys k ON k.id = s.key_id WHERE s.key_id IS NOT NULL
                GROUP BY s.batch_id, 'account:' || coalesce(k.account_id, ${OWN_ACCOUNT('s.key_id')})
                HAVING sum(s.premium) > 0 OR sum(s.refund) > 0),
              postings AS (
                SELECT t.batch_id AS batch, t.kind, p.amount,
                       CASE WHEN substr(p.account, 1, 4) = 'key:' THEN substr(p.account, 5) END AS key_id, p.account
                FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
                WHERE t.kind IN ('premium', 'refund') AND ${HOLDER('p')}),
              actual AS (
                SELECT p.batch,
                       CASE WHEN p.key_id IS NULL THEN p.account ELSE 'account:' || coalesce(k.account_id, ${OWN_ACCOUNT('p.key_id')}) END AS account,
                       sum(CASE WHEN p.kind = 'premium' THEN -p.amount ELSE 0 END) AS premiums,
                       sum(CASE WHEN p.kind = 'refund' THEN p.amount ELSE 0 END) AS refunds
                FROM postings p LEFT JOIN keys k ON k.id = p.key_id
                GROUP BY p.batch,
                         CASE WHEN p.key_id IS NULL THEN p.account ELSE 'account:' || coalesce(k.account_id, ${OWN_ACCOUNT('p.key_id')}) END)
              SELECT e.batch, e.account FROM expected e LEFT JOIN actual a ON a.batch IS NOT DISTINCT FROM e.batch AND a.account = e.account
              WHERE a.account IS NULL OR a.premiums <> e.premiums OR a.refunds <> e.refunds
              UNION ALL
              SELECT a.batch, a.account FROM actual a LEFT JOIN expected e ON e.batch IS NOT DISTINCT FROM a.batch AND e.account = a.account
              WHERE e.account IS NULL
              LIMIT 1`,
        message: (r) => `batch ${r.batch ?? '(none)'}: ledger entries for ${r.account} do not match its calls`,
      },
      {
        sql: `WITH fees AS (
                SELECT t.batch_id, sum(p.amount) AS total FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
                WHERE t.kind = 'treasury_fee' AND p.account = 'treasury' GROUP BY t.batch_id)
              SELECT b.id FROM settlement_batches b LEFT JOIN fees f ON f.batch_id = b.id
              WHERE coalesce(f.total, 0) <> b.treasury_fees
              UNION ALL
              SELECT f.batch_id FROM fees f LEFT JOIN settlement_batches b ON b.id = f.batch_id WHERE b.id IS NULL
              LIMIT 1`,
        message: (r) => `batch ${r.id ?? '(none)'}: treasury fee entries do not match the batch`,
      },
    ],
  },
  {
    name: 'every key belongs to an account',
    probes: [
      {
        sql: `SELECT k.id, k.account_id FROM keys k LEFT JOIN accounts a ON a.id = k.account_id WHERE a.id IS NULL LIMIT 1`,
        message: (r) => `key ${r.id} belongs to ${r.account_id === null ? 'no account' : `account ${r.account_id}, which does not exist`}`,
      },
    ],
  },
  {
    name: 'every deposit reference is used once',
    probes: [
      {
        sql: `SELECT reference, count(*) AS n FROM ledger_transfers WHERE kind = 'deposit'
              GROUP BY reference HAVING count(*) > 1 OR reference IS NULL LIMIT 1`,
        message: (r) =>
          r.reference === null ? `${r.n} deposit(s) have no reference` : `deposit reference ${r.reference} is used ${r.n} times`,
      },
    ],
  },
  {
    name: 'every refill is made once per account and period, as recorded',
    probes: [
      {
        // Each refill transfer is its period's recorded refill: its reference and its amount.
        sql: `SELECT t.id, t.reference FROM ledger_transfers t
              LEFT JOIN account_refills r ON r.transfer_id = t.id
              LEFT JOIN ledger_postings p ON p.transfer_id = t.id AND p.account = 'account:' || r.account_id
              WHERE t.kind = 'refill' AND (r.account_id IS NULL OR t.reference IS NULL
                OR t.reference <> 'refill:' || r.account_id || ':' || r.period OR p.amount IS NULL OR p.amount <> r.amount)
              LIMIT 1`,
        message: (r) => `refill transfer ${r.id} (${r.reference ?? 'no reference'}) is not its period's recorded refill`,
      },
      {
        sql: `SELECT r.account_id, r.period FROM account_refills r LEFT JOIN ledger_transfers t ON t.id = r.transfer_id
              WHERE r.transfer_id IS NOT NULL AND (t.id IS NULL OR t.kind <> 'refill') LIMIT 1`,
        message: (r) => `account ${r.account_id}: the refill of ${r.period} names no refill transfer`,
      },
    ],
  },
  {
    name: 'every prepaid call is charged exactly the premium it reserved',
    probes: [
      {
        sql: `SELECT call_id FROM outcome_records
              WHERE reserved IS NOT NULL AND (instance IS NULL OR key_id IS NULL) OR reserved IS NULL AND instance IS NOT NULL
              LIMIT 1`,
        message: (r) => `call ${r.call_id} reserved a premium without a key and a gateway instance (or names an instance without one)`,
      },
      {
        sql: `SELECT s.call_id, s.premium, o.reserved FROM settled_calls s JOIN outcome_records o ON o.call_id = s.call_id
              WHERE o.reserved IS NOT NULL AND s.outcome = 'ok' AND s.premium <> o.reserved LIMIT 1`,
        message: (r) => `call ${r.call_id} reserved ${r.reserved} and was charged ${r.premium}`,
      },
    ],
  },
  {
    name: 'no gateway spent past its budget and no prepaid account is below zero',
    probes: [
      {
        sql: `SELECT account_id, gateway_id, instance, granted, returned, spent FROM account_escrows
              WHERE returned + spent > granted LIMIT 1`,
        message: (r) =>
          `gateway ${r.gateway_id} (instance ${r.instance}) was granted ${r.granted} of account ${r.account_id}, and returned ${r.returned} and spent ${r.spent}`,
      },
      {
        // Each escrow's spent is what its instance's ingested calls reserved, and every reserved call has its escrow.
        sql: `SELECT r.account_id, r.gateway_id, r.instance, r.total, e.spent FROM (
                SELECT k.account_id, o.gateway_id, o.instance, sum(o.reserved) AS total
                FROM outcome_records o JOIN keys k ON k.id = o.key_id WHERE o.reserved IS NOT NULL
                GROUP BY k.account_id, o.gateway_id, o.instance) AS r
              LEFT JOIN account_escrows e ON e.account_id = r.account_id AND e.gateway_id = r.gateway_id AND e.instance = r.instance
              WHERE e.spent IS NULL OR e.spent <> r.total LIMIT 1`,
        message: (r) =>
          `gateway ${r.gateway_id} (instance ${r.instance}) admitted calls reserving ${r.total} of account ${r.account_id}; its escrow counts ${r.spent ?? 'none'}`,
      },
      {
        sql: `SELECT e.account_id, e.gateway_id, e.instance, e.spent FROM account_escrows e
              WHERE e.spent > 0 AND NOT EXISTS (SELECT 1 FROM outcome_records o JOIN keys k ON k.id = o.key_id
                WHERE o.gateway_id = e.gateway_id AND o.instance = e.instance AND k.account_id = e.account_id AND o.reserved IS NOT NULL)
              LIMIT 1`,
        message: (r) =>
          `gateway ${r.gateway_id} (instance ${r.instance}) counts ${r.spent} spent of account ${r.account_id} by no recorded call`,
      },
      {
        // A prepaid account (prepaid calls, no premium charged without a reservation): its balance
        // covers what its calls reserved and what gateways hold of it.
        sql: `SELECT id, balance, reserved, held FROM (
                SELECT a.id, coalesce(b.balance, 0) AS balance,
                  ${RESERVED_OF('a.id')} AS reserved, ${HELD_OF('a.id')} AS held
                FROM accounts a LEFT JOIN account_balances b ON b.account = 'account:' || a.id
                WHERE EXISTS (SELECT 1 FROM account_escrows e WHERE e.account_id = a.id)
                  AND NOT EXISTS (SELECT 1 FROM keys k JOIN settled_calls s ON s.key_id = k.id
                                  JOIN outcome_records o ON o.call_id = s.call_id
                                  WHERE k.account_id = a.id AND s.premium > 0 AND o.reserved IS NULL)) AS m
              WHERE balance < 0 OR balance - reserved - held < 0 LIMIT 1`,
        message: (r) =>
          `prepaid account ${r.id} holds ${r.balance}, less than its reservations ${r.reserved} and the ${r.held} gateways hold`,
      },
    ],
  },
  {
    name: 'the pool never went negative',
    probes: [
      {
        sql: `SELECT low FROM (
                SELECT min(running) AS low FROM (
                  SELECT sum(amount) OVER (ORDER BY transfer_id ROWS UNBOUNDED PRECEDING) AS running
                  FROM ledger_postings WHERE account = 'pool') AS r) AS m
              WHERE low < 0`,
        message: (r) => `the pool's running balance reached ${r.low}`,
      },
    ],
  },
  {
    name: "each liquidity provider's position equals its share events, and each share event its transfer",
    probes: [...POSITION_PROBES],
  },
  {
    name: "shares are minted and burned at the pool's value, rounded as stated, and are worth the pool's capital",
    capital: 'shares',
  },
  {
    name: 'no withdrawal took locked capital or left the pool below it',
    capital: 'locked',
  },
  {
    name: 'every batch has one receipt that states it, signed by a published key and chained to the one before',
    receipts: 'chain',
  },
  {
    name: "every receipt's root is the Merkle root of its batch's calls as recorded",
    receipts: 'root',
  },
];

/** What `ledger verify` counts, in one row. */
const COUNTS = sql(
  `SELECT (SELECT count(*) FROM account_balances) AS accounts, (SELECT count(*) FROM ledger_transfers) AS transfers,
          (SELECT count(*) FROM ledger_postings) AS postings, count(*) AS batches,
          CAST(coalesce(sum(calls), 0) AS BIGINT) AS settled_calls
   FROM settlement_batches`,
  { walks: true },
);

/** Each check's probes, compiled once. */
const PROBES = LEDGER_CHECKS.map((check) =>
  'probes' in check ? check.probes.map((p) => ({ ...p, statement: sql(p.sql, { walks: true }) })) : [],
);

/** The first violation of the checks on `c`, or null. */
async function firstViolation(c: Conn): Promise<string | null> {
  for (const [i, check] of LEDGER_CHECKS.entries()) {
    if ('receipts' in check) {
      const violation = await RECEIPT_CHECKS[check.receipts](c);
      if (violation !== null) return violation;
    }
    if ('capital' in check) {
      const violation = await shareViolation(c, check.capital);
      if (violation !== null) return violation;
    }
    for (const probe of PROBES[i]!) {
      const row = await c.get<VerifyRow>(probe.statement);
      if (row !== undefined) return probe.message(row);
    }
  }
  return null;
}

/** Check every ledger invariant against committed state, in one read transaction: the first violation (or none), every check's name, and the counts. */
export function verifyLedger(conn: Conn): Promise<LedgerVerifyView> {
  return conn.tx(async (c) => {
    const violation = await firstViolation(c);
    const counts = (await c.get<LedgerVerifyView['counts']>(COUNTS))!;
    return { ok: violation === null, violation, checks: LEDGER_CHECKS.map((check) => check.name), counts };
  }, 'read');
}
