/**
 * The ledger (`../ledger.ts`), written once for both databases. A transfer is its row, its
 * postings and the balances they move, checked first (`checkTransfer`) in the transaction that
 * writes it; `transfer` and `balance` are also the settlement's own (`sql/settlement.ts`), on
 * its transaction's connection.
 */
import type { BalanceView, Clamp, LedgerPoolView, LedgerVerifyView, MarkPaidView, PayoutLine } from '../../../protocol/settlement';
import { sql, type Conn } from '../conn';
import { accountLedger } from '../accounts';
import {
  type Deposit,
  LedgerError,
  payoutLines,
  payoutOf,
  type LedgerTable,
  type LedgerTotals,
  type SettledActivityRow,
  type TransferInput,
} from '../ledger';
import { verifyLedger } from './ledger-verify';
import { balance, transfer } from './postings';
import { HELD_OF, RESERVED_OF } from './budgets';

export { balance, transfer };
import { SqlLpsTable } from './lps';
import { OPERATOR_LP } from '../../../protocol/lps';

/** Accounts' ledger accounts as a primary-key range: `account:` ≤ account < `account;`. */
const ACCOUNT_RANGE = `account >= 'account:' AND account < 'account;'`;
/** The sum of one kind of transfer's postings on one account. */
const KIND_TOTAL = (kind: string, account: string) =>
  `(SELECT CAST(coalesce(sum(p.amount), 0) AS BIGINT) FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
    WHERE t.kind = '${kind}' AND p.account = '${account}')`;

const Q = {
  balances: sql(`SELECT account, balance FROM account_balances ORDER BY account`),
  totals: sql(
    `SELECT count(*) AS batches, CAST(coalesce(sum(calls), 0) AS BIGINT) AS calls, CAST(coalesce(sum(premiums), 0) AS BIGINT) AS premiums,
            CAST(coalesce(sum(treasury_fees), 0) AS BIGINT) AS treasury_fees, CAST(coalesce(sum(refunds), 0) AS BIGINT) AS refunds,
            CAST(coalesce(sum(refunds_owed), 0) AS BIGINT) AS refunds_owed,
            (SELECT count(*) FROM unsettled_outcomes) AS unsettled,
            (SELECT count(*) FROM outcome_records WHERE uncovered = 1) AS uncovered,
            coalesce((SELECT balance FROM account_balances WHERE account = 'pool'), 0) AS pool
     FROM settlement_batches`,
    { replan: true }, // it reads the settler's queue (`SqlOptions.replan`)
  ),
  poolParts: sql(
    `SELECT coalesce((SELECT balance FROM account_balances WHERE account = 'treasury'), 0) AS treasury,
            ${KIND_TOTAL('fund', 'pool')} + ${KIND_TOTAL('lp_deposit', 'pool')} AS funded,
            ${KIND_TOTAL('lp_withdrawal', 'external')} AS withdrawn, ${KIND_TOTAL('payout', 'external')} AS paid_out,
            (SELECT CAST(coalesce(sum(balance), 0) AS BIGINT) FROM account_balances WHERE ${ACCOUNT_RANGE} AND balance > 0) AS owed_to_keys`,
  ),
  clamped: sql(`SELECT clamp, count(*) AS n FROM settled_calls WHERE clamp IS NOT NULL GROUP BY clamp ORDER BY clamp`),
  // What each account may withdraw: its balance less what its unsettled prepaid calls reserved
  // and what gateways hold of it for prepaid calls (budgets.ts), when that is more than nothing.
  payoutRows: sql(
    `SELECT id, name, wallet, balance FROM (
       SELECT a.id, a.name, a.wallet, a.created_at,
              CAST(b.balance - ${RESERVED_OF('a.id')} - ${HELD_OF('a.id')} AS BIGINT) AS balance
       FROM account_balances b JOIN accounts a ON a.id = substr(b.account, 9)
       WHERE b.${ACCOUNT_RANGE} AND b.balance > 0) AS w
     WHERE balance > 0
     ORDER BY created_at, id`,
  ),
  // A payout and a budget grant must not both spend one account's free money: the payout locks
  // the wallet's accounts as grants do (SQLite's write transaction already is one lock).
  lockWallet: sql(`SELECT id FROM accounts WHERE wallet = ? ORDER BY id FOR UPDATE`, { pgOnly: true }),
  reference: sql(`SELECT id FROM ledger_transfers WHERE kind = 'payout' AND reference = ?`),
  // The deposit recorded under a reference (ledger_deposit_reference), with its account's posting.
  deposit: sql(
    `SELECT t.id AS transfer_id, p.account, p.amount FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
     WHERE t.kind = 'deposit' AND t.reference = ? AND p.account <> 'external'`,
  ),
  // Walks `settled_calls_by_batch` from the newest batch, so a large unsettled backlog costs nothing here.
  activity: sql(
    `SELECT s.call_id, s.endpoint_id, s.outcome, o.status, o.latency_ms, s.started_at, s.premium, s.refund,
            s.refund_owed, s.clamp, s.batch_id AS settled_batch
     FROM settled_calls s JOIN outcome_records o ON o.call_id = s.call_id
     ORDER BY s.batch_id DESC, s.started_at DESC, s.call_id DESC LIMIT ?`,
  ),
};

async function totalsOn(conn: Conn): Promise<LedgerTotals> {
  const t = (await conn.get<
    Record<'batches' | 'calls' | 'premiums' | 'treasury_fees' | 'refunds' | 'refunds_owed' | 'unsettled' | 'uncovered' | 'pool', number>
  >(Q.totals))!;
  return {
    pool_size: t.pool,
    settled_batches: t.batches,
    settled_calls: t.calls,
    unsettled_calls: t.unsettled,
    total_calls: t.calls + t.unsettled,
    uncovered_calls: t.uncovered,
    total_premiums: t.premiums,
    total_refunds: t.refunds,
    total_refunds_owed: t.refunds_owed,
    total_treasury_fees: t.treasury_fees,
  };
}

export class SqlLedgerTable implements LedgerTable {
  constructor(private readonly conn: Conn) {}

  transfer(input: TransferInput): Promise<number> {
    return transfer(this.conn, input);
  }

  async fund(amount: number, at: number, actor: string, note: string | null): Promise<number> {
    // The operator's money is the built-in provider's position: the deposit mints its shares.
    return (await new SqlLpsTable(this.conn).deposit(OPERATOR_LP, amount, 'fund', note, at, actor)).transfer_id;
  }

  deposit(accountId: string, amount: number, reference: string, at: number, actor: string): Promise<Deposit> {
    return this.conn.tx(async (c) => {
      const account = accountLedger(accountId);
      const prior = await c.get<{ transfer_id: number; account: string; amount: number }>(Q.deposit, [reference]);
      if (prior !== undefined) {
        if (prior.account !== account || prior.amount !== amount) {
          throw new LedgerError('reference_used', `deposit reference ${JSON.stringify(reference)} was used for another deposit`);
        }
        const now = await balance(c, account);
        return { transfer_id: prior.transfer_id, account_id: accountId, amount, reference, balance: now, created: false };
      }
      const postings = [
        { account: 'external', amount: -amount },
        { account, amount },
      ];
      const transferId = await transfer(c, { kind: 'deposit', at, actor, reference, postings });
      return { transfer_id: transferId, account_id: accountId, amount, reference, balance: await balance(c, account), created: true };
    }, 'serial');
  }

  markPaid(wallet: string, amount: number, reference: string, at: number, actor: string): Promise<MarkPaidView> {
    return this.conn.tx(async (c) => {
      if ((await c.value(Q.reference, [reference])) !== undefined) {
        throw new LedgerError('duplicate_reference', `a payout with reference ${JSON.stringify(reference)} is already recorded`);
      }
      if (c.dialect === 'pg') await c.all(Q.lockWallet, [wallet]);
      const { paid, postings, owed } = payoutOf(payoutLines(await c.all(Q.payoutRows), wallet), wallet, amount);
      const transferId = await transfer(c, { kind: 'payout', at, actor, reference, postings });
      return { transfer_id: transferId, wallet, amount, reference, paid, owed };
    }, 'serial');
  }

  balance(account: string): Promise<number> {
    return balance(this.conn, account);
  }

  async balances(prefix?: string): Promise<BalanceView[]> {
    const all = await this.conn.all<BalanceView>(Q.balances);
    return prefix === undefined ? all : all.filter((b) => b.account.startsWith(prefix));
  }

  async payouts(wallet?: string): Promise<PayoutLine[]> {
    return payoutLines(await this.conn.all(Q.payoutRows), wallet);
  }

  poolView(): Promise<LedgerPoolView> {
    return this.conn.tx(async (c) => {
      const t = await totalsOn(c);
      const parts = (await c.get<{ treasury: number; funded: number; withdrawn: number; owed_to_keys: number; paid_out: number }>(
        Q.poolParts,
      ))!;
      const clamped: LedgerPoolView['clamped'] = { pool_depleted: 0, cap_clamped: 0, batch_capped: 0, call_capped: 0 };
      for (const row of await c.all<{ clamp: Clamp; n: number }>(Q.clamped)) clamped[row.clamp] = row.n;
      return {
        pool: t.pool_size,
        treasury: parts.treasury,
        funded: parts.funded,
        withdrawn: parts.withdrawn,
        premiums: t.total_premiums,
        treasury_fees: t.total_treasury_fees,
        refunds: t.total_refunds,
        refunds_owed: t.total_refunds_owed,
        shortfall: t.total_refunds_owed - t.total_refunds,
        clamped,
        owed_to_keys: parts.owed_to_keys,
        paid_out: parts.paid_out,
        settled_batches: t.settled_batches,
        settled_calls: t.settled_calls,
        backlog: t.unsettled_calls,
      };
    }, 'read');
  }

  verify(): Promise<LedgerVerifyView> {
    return verifyLedger(this.conn);
  }

  poolSize(): Promise<number> {
    return balance(this.conn, 'pool');
  }

  async settledBatches(): Promise<number> {
    return (await totalsOn(this.conn)).settled_batches;
  }

  async totalRefunds(): Promise<number> {
    return (await totalsOn(this.conn)).total_refunds;
  }

  async totalPremiums(): Promise<number> {
    return (await totalsOn(this.conn)).total_premiums;
  }

  async totalCalls(): Promise<number> {
    return (await totalsOn(this.conn)).total_calls;
  }

  totals(): Promise<LedgerTotals> {
    return totalsOn(this.conn);
  }

  recentActivity(limit: number): Promise<SettledActivityRow[]> {
    return this.conn.all<SettledActivityRow>(Q.activity, [limit]);
  }
}
