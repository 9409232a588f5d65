/**
 * The ledger on PostgreSQL: `../ledger.ts`'s statements, asynchronous, with its rules
 * (`../ledger-core.ts`): a transfer's shape is checked before it is written, in the
 * transaction that writes it, as on SQLite.
 *
 * Transfers are written by one statement however many there are and however many postings each
 * has (`transferAll`: a settlement batch books at most three, a premium, a treasury fee and a
 * refund, with a posting per key in the first and the last): their rows (ids from the identity
 * column, `RETURNING id`), their postings (mapped to their transfer by its position in the
 * input), and each account's balance moved once by the sum of its postings. The pool's CHECK
 * (balance ≥ 0) is tested on that sum; a batch books its premiums before its refunds, so the
 * pool's lowest point is its balance after the batch, which the sum is.
 */
import type { BalanceView, Clamp, LedgerVerifyView, MarkPaidView, PayoutLine, PoolView } from '../../../protocol/settlement';
import { CLAMPED_COUNTS, KEY_RANGE, SETTLED_ACTIVITY, type LedgerTable } from '../ledger';
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
} from '../ledger-core';
import type { Async } from '../seam';
import { sql, type PgConn } from './conn';
import { pgVerifyLedger } from './ledger-verify';

/**
 * The common table expressions that write transfers' rows (`transferParams`' parameters): one
 * row per transfer in input order (ids follow it: the rows are inserted sorted by `n`), and its
 * postings. `n` maps each posting to its transfer; `numbered` answers the ids. A settlement
 * batch writes its transfers with them inside its one statement (`pg/settlement-sql.ts`),
 * and moves the balances once for its whole transaction (`BALANCE_CTES`).
 */
export const TRANSFER_CTES = `input AS (
       SELECT * FROM unnest(@at::bigint[], @kind::text[], @call_id::uuid[], @batch_id::bigint[], @reference::text[], @actor::text[])
         WITH ORDINALITY AS i (at, kind, call_id, batch_id, reference, actor, n)),
     transfers AS (
       INSERT INTO ledger_transfers (at, kind, call_id, batch_id, reference, actor)
       SELECT at, kind, call_id, batch_id, reference, actor FROM input ORDER BY n
       RETURNING id),
     numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM transfers),
     postings AS (
       INSERT INTO ledger_postings (transfer_id, account, amount)
       SELECT t.id, p.account, p.amount
       FROM unnest(@posting_of::bigint[], @account::text[], @amount::bigint[]) AS p (n, account, amount) JOIN numbered t ON t.n = p.n)`;

/**
 * The common table expressions that move balances: each account in `@account` by the sum of
 * its `@amount`s (an account may repeat), its row created on its first move.
 */
export const BALANCE_CTES = `moves AS (
       SELECT account, sum(amount)::bigint AS amount FROM unnest(@account::text[], @amount::bigint[]) AS m (account, amount)
       GROUP BY account),
     -- Not an upsert: the pool's CHECK (balance ≥ 0) would be tested on the would-be inserted row.
     updated AS (
       UPDATE account_balances b SET balance = b.balance + m.amount FROM moves m WHERE b.account = m.account
       RETURNING b.account),
     created AS (
       INSERT INTO account_balances (account, balance)
       SELECT account, amount FROM moves WHERE account NOT IN (SELECT account FROM updated))`;

const Q = {
  transfers: sql(`WITH ${TRANSFER_CTES}, ${BALANCE_CTES}
     SELECT id FROM numbered ORDER BY n`),
  balance: sql(`SELECT balance FROM account_balances WHERE account = ?`),
  balances: sql(`SELECT account, balance FROM account_balances ORDER BY account`),
  totals: sql(
    `SELECT count(*) AS batches, coalesce(sum(calls), 0)::bigint AS calls, coalesce(sum(premiums), 0)::bigint AS premiums,
            coalesce(sum(treasury_fees), 0)::bigint AS treasury_fees, coalesce(sum(refunds), 0)::bigint AS refunds,
            coalesce(sum(refunds_owed), 0)::bigint AS refunds_owed,
            (SELECT count(*) FROM unsettled_outcomes) AS unsettled,
            coalesce((SELECT balance FROM account_balances WHERE account = 'pool'), 0) AS pool
     FROM settlement_batches`,
    { replan: true }, // it reads the settler's queue (`SqlOptions.replan`)
  ),
  poolParts: sql(
    `SELECT coalesce((SELECT balance FROM account_balances WHERE account = 'treasury'), 0) AS treasury,
            (SELECT coalesce(sum(p.amount), 0)::bigint FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
             WHERE t.kind = 'fund' AND p.account = 'pool') AS funded,
            (SELECT coalesce(sum(balance), 0)::bigint FROM account_balances WHERE ${KEY_RANGE} AND balance > 0) AS owed_to_keys,
            (SELECT coalesce(sum(p.amount), 0)::bigint FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
             WHERE t.kind = 'payout' AND p.account = 'external') AS paid_out`,
  ),
  clamped: sql(CLAMPED_COUNTS),
  payoutRows: sql(
    `SELECT k.id, k.name, k.wallet, b.balance
     FROM account_balances b JOIN keys k ON k.id = substr(b.account, 5)
     WHERE b.${KEY_RANGE} AND b.balance > 0
     ORDER BY k.created_at, k.id`,
  ),
  reference: sql(`SELECT id FROM ledger_transfers WHERE kind = 'payout' AND reference = ?`),
  activity: sql(SETTLED_ACTIVITY),
};

/** `Q.transfers`' parameters for `inputs`: one array per column, the postings flattened with their transfer's position. */
export function transferParams(inputs: readonly TransferInput[]) {
  const p = {
    at: [] as number[],
    kind: [] as string[],
    call_id: [] as (string | null)[],
    batch_id: [] as (number | null)[],
    reference: [] as (string | null)[],
    actor: [] as string[],
    posting_of: [] as number[],
    account: [] as string[],
    amount: [] as number[],
  };
  inputs.forEach((input, i) => {
    p.at.push(input.at);
    p.kind.push(input.kind);
    p.call_id.push(input.callId ?? null);
    p.batch_id.push(input.batchId ?? null);
    p.reference.push(input.reference ?? null);
    p.actor.push(input.actor);
    for (const posting of input.postings) {
      p.posting_of.push(i + 1);
      p.account.push(posting.account);
      p.amount.push(posting.amount);
    }
  });
  return p;
}

export class PgLedgerTable implements Async<LedgerTable> {
  constructor(private readonly conn: PgConn) {}

  // -------------------------------------------------------------------------------------
  // Writing

  /**
   * Record one transfer: its row, its postings and the balances they move. Throws
   * `LedgerError('unbalanced')` unless the postings are non-zero, on distinct accounts, and
   * sum to zero. Returns the transfer id.
   */
  async transfer(input: TransferInput): Promise<number> {
    return (await this.transferAll([input]))[0]!;
  }

  /**
   * Record `inputs` in order, in one statement (all or none): each is checked as `transfer`
   * checks it before anything is written. Returns their ids, in order.
   */
  async transferAll(inputs: readonly TransferInput[]): Promise<number[]> {
    if (inputs.length === 0) return [];
    for (const input of inputs) checkTransfer(input);
    return this.conn.column<number>(Q.transfers, transferParams(inputs));
  }

  /** external → pool. Inside `Store.mutate`. */
  fund(amount: number, at: number, actor: string, note: string | null): Promise<number> {
    return this.transfer(fundTransfer(amount, at, actor, note));
  }

  /**
   * Record an external payment to `wallet` (as `LedgerTable.markPaid`): from the wallet's keys
   * with a positive balance, oldest key first. Inside `Store.mutate`; called outside one, it
   * takes the writer lock itself, so the balances it pays from cannot move before it writes.
   */
  markPaid(wallet: string, amount: number, reference: string, at: number, actor: string): Promise<MarkPaidView> {
    return this.conn.tx(async (c) => {
      if ((await c.value(Q.reference, [reference])) !== undefined) throw duplicateReference(reference);
      const { paid, postings, owed } = payoutOf(payoutLines(await c.all<PayoutRow>(Q.payoutRows), wallet), wallet, amount);
      const transferId = await new PgLedgerTable(c).transfer({ kind: 'payout', at, actor, reference, postings });
      return { transfer_id: transferId, wallet, amount, reference, paid, owed };
    }, 'serial');
  }

  // -------------------------------------------------------------------------------------
  // Reading

  /** Balance of one account (0 for an account that never moved). */
  async balance(account: string): Promise<number> {
    return (await this.conn.value<number>(Q.balance, [account])) ?? 0;
  }

  /** Every account with its balance, or those starting with `prefix`. */
  async balances(prefix?: string): Promise<BalanceView[]> {
    const all = await this.conn.all<BalanceView>(Q.balances);
    return prefix === undefined ? all : all.filter((b) => b.account.startsWith(prefix));
  }

  /** What is owed per wallet (as `LedgerTable.payouts`). */
  async payouts(wallet?: string): Promise<PayoutLine[]> {
    return payoutLines(await this.conn.all<PayoutRow>(Q.payoutRows), wallet);
  }

  /** What `svcctl pool show` prints: balances, flows, clamps and the shortfall, from one snapshot. */
  poolView(): Promise<PoolView> {
    return this.conn.tx(async (c) => {
      const totals = await totalsOn(c);
      const parts = (await c.get<{ treasury: number; funded: number; owed_to_keys: number; paid_out: number }>(Q.poolParts))!;
      return poolViewOf(totals, { ...parts, clamped: await c.all<{ clamp: Clamp; n: number }>(Q.clamped) });
    }, 'read');
  }

  /** Check every ledger invariant; see `../ledger-verify.ts`. */
  verify(): Promise<LedgerVerifyView> {
    return pgVerifyLedger(this.conn);
  }

  // -------------------------------------------------------------------------------------
  // For the indexer (docs/design.md §7). `totals()` reads all in one statement.

  /** Balance of the pool, micro-units. */
  poolSize(): Promise<number> {
    return this.balance('pool');
  }

  /** Number of settlement batches committed. */
  async settledBatches(): Promise<number> {
    return (await this.totals()).settled_batches;
  }

  /** Refunds paid over all batches (after clamping), micro-units. */
  async totalRefunds(): Promise<number> {
    return (await this.totals()).total_refunds;
  }

  /** Premiums collected over all batches (before the treasury fee), micro-units. */
  async totalPremiums(): Promise<number> {
    return (await this.totals()).total_premiums;
  }

  /** Every outcome control holds, settled or not. */
  async totalCalls(): Promise<number> {
    return (await this.totals()).total_calls;
  }

  /** All the aggregate numbers at once, from one consistent read. */
  totals(): Promise<LedgerTotals> {
    return totalsOn(this.conn);
  }

  /** The last `limit` settled calls, newest batch first (as `LedgerTable.recentActivity`). */
  recentActivity(limit: number): Promise<SettledActivityRow[]> {
    return this.conn.all<SettledActivityRow>(Q.activity, [limit]);
  }
}

async function totalsOn(conn: PgConn): Promise<LedgerTotals> {
  const row = (await conn.get<BatchTotalsRow & { unsettled: number; pool: number }>(Q.totals))!;
  return ledgerTotals(row, row.unsettled, row.pool);
}
