/**
 * The ledger table family (migrations 3 and 6): double-entry transfers whose postings sum to
 * zero, the running balance of every account, pool funding, payouts, and the numbers the pool
 * view and the indexer report. The one module that writes ledger SQL besides the settler's
 * batch commit (`settlement.ts`) and the invariant checks (`ledger-verify.ts`); the rules
 * themselves (a transfer's shape, a payout's split, the views) are `ledger-core.ts`'s.
 *
 * Accounts: `external` (money entering or leaving svc), `pool`, `treasury`, `key:<key id>`.
 * A posting credits (+) or debits (−) one account; amounts are integer micro-units. Writers
 * must run inside a transaction (`Store.mutate`, or the settler's batch transaction).
 */
import type { Db } from './db';
import type { BalanceView, Clamp, LedgerVerifyView, MarkPaidView, PayoutLine, PoolView } from '../../protocol/settlement';
import {
  checkTransfer,
  duplicateReference,
  fundTransfer,
  ledgerTotals,
  payoutLines,
  payoutOf,
  poolViewOf,
  type BatchTotalsRow,
  type LedgerTotals,
  type PayoutRow,
  type SettledActivityRow,
  type TransferInput,
} from './ledger-core';
import { verifyLedger } from './ledger-verify';

export {
  LedgerError,
  type ActivityRow,
  type LedgerTotals,
  type Posting,
  type SettledActivityRow,
  type TransferInput,
  type TransferKind,
} from './ledger-core';

/** Key accounts as a primary-key range: `key:` ≤ account < `key;`. */
export const KEY_RANGE = `account >= 'key:' AND account < 'key;'`;

/**
 * The last settled calls, newest batch first (in both dialects): walks `settled_calls_by_batch`
 * from the newest batch, so a large unsettled backlog costs nothing here.
 */
export const SETTLED_ACTIVITY = `SELECT s.call_id, s.endpoint_id, s.outcome, o.status, o.latency_ms, s.started_at, s.premium, s.refund,
         s.refund_owed, s.clamp, s.batch_id AS settled_batch
  FROM settled_calls s JOIN outcome_records o ON o.call_id = s.call_id
  ORDER BY s.batch_id DESC, s.started_at DESC, s.call_id DESC LIMIT ?`;

/** How many settled calls each clamp held back, in both dialects. */
export const CLAMPED_COUNTS = `SELECT clamp, count(*) AS n FROM settled_calls WHERE clamp IS NOT NULL GROUP BY clamp ORDER BY clamp`;

export class LedgerTable {
  private readonly db: Db;
  private readonly transferStmt;
  private readonly postingStmt;
  private readonly addBalanceStmt;
  private readonly newBalanceStmt;
  private readonly balanceStmt;
  private readonly balancesStmt;
  private readonly batchTotalsStmt;
  private readonly unsettledStmt;
  private readonly kindTotalStmt;
  private readonly clampedStmt;
  private readonly owedToKeysStmt;
  private readonly payoutRowsStmt;
  private readonly referenceStmt;
  private readonly activityStmt;
  private readonly totalsTx;

  constructor(db: Db) {
    this.db = db;
    this.transferStmt = db.prepare(
      `INSERT INTO ledger_transfers (at, kind, call_id, batch_id, reference, actor) VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.postingStmt = db.prepare(`INSERT INTO ledger_postings (transfer_id, account, amount) VALUES (?, ?, ?)`);
    // Not an upsert: the pool's CHECK (balance ≥ 0) would be tested on the would-be inserted row.
    this.addBalanceStmt = db.prepare(`UPDATE account_balances SET balance = balance + ? WHERE account = ?`);
    this.newBalanceStmt = db.prepare(`INSERT INTO account_balances (account, balance) VALUES (?, ?)`);
    this.balanceStmt = db.prepare(`SELECT balance FROM account_balances WHERE account = ?`).pluck();
    this.balancesStmt = db.prepare(`SELECT account, balance FROM account_balances ORDER BY account`);
    this.batchTotalsStmt = db.prepare(
      `SELECT count(*) AS batches, coalesce(sum(calls), 0) AS calls, coalesce(sum(premiums), 0) AS premiums,
              coalesce(sum(treasury_fees), 0) AS treasury_fees, coalesce(sum(refunds), 0) AS refunds,
              coalesce(sum(refunds_owed), 0) AS refunds_owed
       FROM settlement_batches`,
    );
    this.unsettledStmt = db.prepare(`SELECT count(*) FROM unsettled_outcomes`).pluck();
    this.kindTotalStmt = db
      .prepare(
        `SELECT coalesce(sum(p.amount), 0) FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
       WHERE t.kind = ? AND p.account = ?`,
      )
      .pluck();
    this.clampedStmt = db.prepare(CLAMPED_COUNTS);
    this.owedToKeysStmt = db.prepare(`SELECT coalesce(sum(balance), 0) FROM account_balances WHERE ${KEY_RANGE} AND balance > 0`).pluck();
    this.payoutRowsStmt = db.prepare(
      `SELECT k.id, k.name, k.wallet, b.balance
       FROM account_balances b JOIN keys k ON k.id = substr(b.account, 5)
       WHERE b.${KEY_RANGE} AND b.balance > 0
       ORDER BY k.created_at, k.id`,
    );
    this.referenceStmt = db.prepare(`SELECT id FROM ledger_transfers WHERE kind = 'payout' AND reference = ?`).pluck();
    this.activityStmt = db.prepare(SETTLED_ACTIVITY);
    this.totalsTx = db.transaction((): LedgerTotals =>
      ledgerTotals(this.batchTotalsStmt.get() as BatchTotalsRow, this.unsettledStmt.get() as number, this.balance('pool')),
    );
  }

  // -------------------------------------------------------------------------------------
  // Writing

  /**
   * Record one transfer: its row, its postings and the balances they move. Throws
   * `LedgerError('unbalanced')` unless the postings are non-zero, on distinct accounts, and
   * sum to zero. Must run inside a transaction; returns the transfer id.
   */
  transfer(input: TransferInput): number {
    checkTransfer(input);
    const id = Number(
      this.transferStmt.run(input.at, input.kind, input.callId ?? null, input.batchId ?? null, input.reference ?? null, input.actor)
        .lastInsertRowid,
    );
    for (const p of input.postings) {
      this.postingStmt.run(id, p.account, p.amount);
      if (this.addBalanceStmt.run(p.amount, p.account).changes === 0) this.newBalanceStmt.run(p.account, p.amount);
    }
    return id;
  }

  /** external → pool. Inside `Store.mutate`. */
  fund(amount: number, at: number, actor: string, note: string | null): number {
    return this.transfer(fundTransfer(amount, at, actor, note));
  }

  /**
   * Record an external payment to `wallet`: key accounts → external, taken from the wallet's
   * keys with a positive balance, oldest key first, never more than they hold together.
   * Inside `Store.mutate`. Throws `LedgerError` when nothing is owed, the amount is more
   * than owed, or the reference was used by an earlier payout.
   */
  markPaid(wallet: string, amount: number, reference: string, at: number, actor: string): MarkPaidView {
    if (this.referenceStmt.get(reference) !== undefined) throw duplicateReference(reference);
    const { paid, postings, owed } = payoutOf(this.payouts(wallet), wallet, amount);
    const transferId = this.transfer({ kind: 'payout', at, actor, reference, postings });
    return { transfer_id: transferId, wallet, amount, reference, paid, owed };
  }

  // -------------------------------------------------------------------------------------
  // Reading

  /** Balance of one account (0 for an account that never moved). */
  balance(account: string): number {
    return (this.balanceStmt.get(account) as number | undefined) ?? 0;
  }

  /** Every account with its balance, or those starting with `prefix`. */
  balances(prefix?: string): BalanceView[] {
    const all = this.balancesStmt.all() as BalanceView[];
    return prefix === undefined ? all : all.filter((b) => b.account.startsWith(prefix));
  }

  /**
   * What is owed per wallet: the positive balances of the keys attached to it, plus one line
   * (wallet null) for keys without a wallet yet. With `wallet`, only that wallet's line
   * (EVM addresses match case-insensitively). Keys within a line are oldest first.
   */
  payouts(wallet?: string): PayoutLine[] {
    return payoutLines(this.payoutRowsStmt.all() as PayoutRow[], wallet);
  }

  /** What `svcctl pool show` prints: balances, flows, clamps and the shortfall. */
  poolView(): PoolView {
    return this.db.transaction((): PoolView =>
      poolViewOf(this.totalsTx(), {
        treasury: this.balance('treasury'),
        funded: this.kindTotalStmt.get('fund', 'pool') as number,
        clamped: this.clampedStmt.all() as { clamp: Clamp; n: number }[],
        owed_to_keys: this.owedToKeysStmt.get() as number,
        paid_out: this.kindTotalStmt.get('payout', 'external') as number,
      }),
    )();
  }

  /** Check every ledger invariant; see `ledger-verify.ts`. */
  verify(): LedgerVerifyView {
    return verifyLedger(this.db);
  }

  // -------------------------------------------------------------------------------------
  // For the indexer (docs/design.md §7). Each reads committed state; `totals()` reads all in one view.

  /** Balance of the pool, micro-units. */
  poolSize(): number {
    return this.balance('pool');
  }

  /** Number of settlement batches committed. */
  settledBatches(): number {
    return this.totalsTx().settled_batches;
  }

  /** Refunds paid over all batches (after clamping), micro-units. */
  totalRefunds(): number {
    return this.totalsTx().total_refunds;
  }

  /** Premiums collected over all batches (before the treasury fee), micro-units. */
  totalPremiums(): number {
    return this.totalsTx().total_premiums;
  }

  /** Every outcome control holds, settled or not. */
  totalCalls(): number {
    return this.totalsTx().total_calls;
  }

  /** All the aggregate numbers at once, from one consistent read. */
  totals(): LedgerTotals {
    return this.totalsTx();
  }

  /**
   * The last `limit` settled calls (docs/design.md §7): the calls of the latest settlement batches,
   * newest batch first and, within a batch, newest call first. Calls not settled yet are not
   * here (the indexer pages through them in `/api/activity`). Ids are as stored: map them to
   * public opaque ids before publishing.
   */
  recentActivity(limit: number): SettledActivityRow[] {
    return this.activityStmt.all(limit) as SettledActivityRow[];
  }
}
