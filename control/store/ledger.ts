/**
 * The ledger table family (migrations 3 and 6): double-entry transfers whose postings sum to
 * zero, the running balance of every account, pool funding, payouts, and the numbers the pool
 * view and the indexer report. The one module that writes ledger SQL besides the settler's
 * batch commit (`settlement.ts`) and the invariant checks (`ledger-verify.ts`).
 *
 * Accounts: `external` (money entering or leaving svc), `pool`, `treasury`, `key:<key id>`.
 * A posting credits (+) or debits (−) one account; amounts are integer micro-units. Writers
 * must run inside a transaction (`Store.mutate`, or the settler's batch transaction).
 */
import type { Db } from './db';
import type { Outcome } from '../../protocol/outcome';
import { keyAccount, type BalanceView, type Clamp, type MarkPaidView, type PayoutLine, type PoolView } from '../../protocol/settlement';
import { verifyLedger } from './ledger-verify';
import type { LedgerVerifyView } from '../../protocol/settlement';

export type TransferKind = 'fund' | 'premium' | 'treasury_fee' | 'refund' | 'payout';

export interface Posting {
  account: string;
  /** + credits the account, − debits it; never 0. */
  amount: number;
}

export interface TransferInput {
  kind: TransferKind;
  at: number;
  actor: string;
  postings: Posting[];
  callId?: string | null;
  batchId?: number | null;
  reference?: string | null;
}

/** A ledger rule a request would break; the admin API answers 409 with the message. */
export class LedgerError extends Error {
  constructor(
    readonly reason: 'unbalanced' | 'nothing_owed' | 'over_owed' | 'duplicate_reference',
    message: string,
  ) {
    super(message);
    this.name = 'LedgerError';
  }
}

/** The indexer's aggregate numbers (DESIGN §7), read in one transaction. Money in micro-units. */
export interface LedgerTotals {
  /** Balance of the pool account. */
  pool_size: number;
  /** Settlement batches committed. */
  settled_batches: number;
  /** Outcomes settled (each exactly once). */
  settled_calls: number;
  /** Outcomes received and not settled yet. */
  unsettled_calls: number;
  /** Every outcome control holds: settled + unsettled. */
  total_calls: number;
  /** Premiums collected (key → pool), before the treasury fee. */
  total_premiums: number;
  /** Refunds paid (pool → key), after clamping. */
  total_refunds: number;
  /** Refunds owed before clamping; minus `total_refunds` is the shortfall. */
  total_refunds_owed: number;
  total_treasury_fees: number;
}

/** One recorded call as stored, with its settlement fields. */
export interface ActivityRow {
  call_id: string;
  endpoint_id: string;
  outcome: Outcome;
  status: number;
  latency_ms: number;
  started_at: number;
  premium: number | null;
  refund: number | null;
  refund_owed: number | null;
  clamp: Clamp | null;
  settled_batch: number | null;
}

/** A settled call: the settler writes its batch and amounts together. */
export type SettledActivityRow = ActivityRow & { premium: number; refund: number; refund_owed: number; settled_batch: number };

interface PayoutRow {
  id: string;
  name: string | null;
  wallet: string | null;
  balance: number;
}

/** EVM addresses are case-insensitive (the case is only a checksum); Solana's are not. */
const walletKey = (wallet: string): string => (wallet.startsWith('0x') ? wallet.toLowerCase() : wallet);

/** Key accounts as a primary-key range: `key:` ≤ account < `key;`. */
const KEY_RANGE = `account >= 'key:' AND account < 'key;'`;

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
    this.unsettledStmt = db.prepare(`SELECT count(*) FROM outcomes WHERE settled_batch IS NULL`).pluck();
    this.kindTotalStmt = db
      .prepare(
        `SELECT coalesce(sum(p.amount), 0) FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
       WHERE t.kind = ? AND p.account = ?`,
      )
      .pluck();
    this.clampedStmt = db.prepare(`SELECT clamp, count(*) AS n FROM outcomes WHERE clamp IS NOT NULL GROUP BY clamp`);
    this.owedToKeysStmt = db.prepare(`SELECT coalesce(sum(balance), 0) FROM account_balances WHERE ${KEY_RANGE} AND balance > 0`).pluck();
    this.payoutRowsStmt = db.prepare(
      `SELECT k.id, k.name, k.wallet, b.balance
       FROM account_balances b JOIN keys k ON k.id = substr(b.account, 5)
       WHERE b.${KEY_RANGE} AND b.balance > 0
       ORDER BY k.created_at, k.id`,
    );
    this.referenceStmt = db.prepare(`SELECT id FROM ledger_transfers WHERE kind = 'payout' AND reference = ?`).pluck();
    // Walks the settled-only index from the newest batch, so a large unsettled backlog costs nothing here.
    this.activityStmt = db.prepare(
      `SELECT call_id, endpoint_id, outcome, status, latency_ms, started_at, premium, refund, refund_owed, clamp, settled_batch
       FROM outcomes WHERE settled_batch IS NOT NULL
       ORDER BY settled_batch DESC, started_at DESC, call_id DESC LIMIT ?`,
    );
    this.totalsTx = db.transaction((): LedgerTotals => {
      const b = this.batchTotalsStmt.get() as {
        batches: number;
        calls: number;
        premiums: number;
        treasury_fees: number;
        refunds: number;
        refunds_owed: number;
      };
      const unsettled = this.unsettledStmt.get() as number;
      return {
        pool_size: this.balance('pool'),
        settled_batches: b.batches,
        settled_calls: b.calls,
        unsettled_calls: unsettled,
        total_calls: b.calls + unsettled,
        total_premiums: b.premiums,
        total_refunds: b.refunds,
        total_refunds_owed: b.refunds_owed,
        total_treasury_fees: b.treasury_fees,
      };
    });
  }

  // -------------------------------------------------------------------------------------
  // Writing

  /**
   * Record one transfer: its row, its postings and the balances they move. Throws
   * `LedgerError('unbalanced')` unless the postings are non-zero, on distinct accounts, and
   * sum to zero. Must run inside a transaction; returns the transfer id.
   */
  transfer(input: TransferInput): number {
    let sum = 0;
    const accounts = new Set<string>();
    for (const p of input.postings) {
      if (!Number.isSafeInteger(p.amount) || p.amount === 0 || accounts.has(p.account)) {
        throw new LedgerError('unbalanced', `transfer ${input.kind}: bad posting ${p.account} ${p.amount}`);
      }
      accounts.add(p.account);
      sum += p.amount;
    }
    if (sum !== 0 || accounts.size < 2) throw new LedgerError('unbalanced', `transfer ${input.kind}: postings sum to ${sum}`);
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
    return this.transfer({
      kind: 'fund',
      at,
      actor,
      reference: note,
      postings: [
        { account: 'external', amount: -amount },
        { account: 'pool', amount },
      ],
    });
  }

  /**
   * Record an external payment to `wallet`: key accounts → external, taken from the wallet's
   * keys with a positive balance, oldest key first, never more than they hold together.
   * Inside `Store.mutate`. Throws `LedgerError` when nothing is owed, the amount is more
   * than owed, or the reference was used by an earlier payout.
   */
  markPaid(wallet: string, amount: number, reference: string, at: number, actor: string): MarkPaidView {
    if (this.referenceStmt.get(reference) !== undefined) {
      throw new LedgerError('duplicate_reference', `a payout with reference ${JSON.stringify(reference)} is already recorded`);
    }
    const lines = this.payouts(wallet);
    const owed = lines[0]?.owed ?? 0;
    if (owed === 0) throw new LedgerError('nothing_owed', `nothing is owed to ${wallet}`);
    if (amount > owed) throw new LedgerError('over_owed', `${amount} is more than the ${owed} owed to ${wallet}`);
    const paid: { key_id: string; amount: number }[] = [];
    let left = amount;
    for (const key of lines[0]!.keys) {
      if (left === 0) break;
      const take = Math.min(left, key.balance);
      paid.push({ key_id: key.id, amount: take });
      left -= take;
    }
    const postings: Posting[] = paid.map((p) => ({ account: keyAccount(p.key_id), amount: -p.amount }));
    postings.push({ account: 'external', amount });
    const transferId = this.transfer({ kind: 'payout', at, actor, reference, postings });
    return { transfer_id: transferId, wallet, amount, reference, paid, owed: owed - amount };
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
    const want = wallet === undefined ? undefined : walletKey(wallet);
    const lines = new Map<string | null, PayoutLine>();
    for (const row of this.payoutRowsStmt.all() as PayoutRow[]) {
      const group = row.wallet === null ? null : walletKey(row.wallet);
      if (want !== undefined && group !== want) continue;
      let line = lines.get(group);
      if (line === undefined) lines.set(group, (line = { wallet: row.wallet, owed: 0, keys: [] }));
      line.owed += row.balance;
      line.keys.push({ id: row.id, name: row.name, balance: row.balance });
    }
    return [...lines.values()].sort((a, b) => (a.wallet === null ? 1 : b.wallet === null ? -1 : a.wallet < b.wallet ? -1 : 1));
  }

  /** What `svcctl pool show` prints: balances, flows, clamps and the shortfall. */
  poolView(): PoolView {
    return this.db.transaction((): PoolView => {
      const t = this.totalsTx();
      const clamped = { pool_depleted: 0, cap_clamped: 0 };
      for (const row of this.clampedStmt.all() as { clamp: Clamp; n: number }[]) clamped[row.clamp] = row.n;
      return {
        pool: t.pool_size,
        treasury: this.balance('treasury'),
        funded: this.kindTotalStmt.get('fund', 'pool') as number,
        premiums: t.total_premiums,
        treasury_fees: t.total_treasury_fees,
        refunds: t.total_refunds,
        refunds_owed: t.total_refunds_owed,
        shortfall: t.total_refunds_owed - t.total_refunds,
        clamped,
        owed_to_keys: this.owedToKeysStmt.get() as number,
        paid_out: this.kindTotalStmt.get('payout', 'external') as number,
        settled_batches: t.settled_batches,
        settled_calls: t.settled_calls,
        backlog: t.unsettled_calls,
      };
    })();
  }

  /** Check every ledger invariant; see `ledger-verify.ts`. */
  verify(): LedgerVerifyView {
    return verifyLedger(this.db);
  }

  // -------------------------------------------------------------------------------------
  // For the indexer (DESIGN §7). Each reads committed state; `totals()` reads all in one view.

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
   * The last `limit` settled calls (DESIGN §7): the calls of the latest settlement batches,
   * newest batch first and, within a batch, newest call first. Calls not settled yet are not
   * here (the indexer pages through them in `/api/activity`). Ids are as stored: map them to
   * public opaque ids before publishing.
   */
  recentActivity(limit: number): SettledActivityRow[] {
    return this.activityStmt.all(limit) as SettledActivityRow[];
  }
}
