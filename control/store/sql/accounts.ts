/** Accounts (`../accounts.ts`), on either database. */
import { sql, type Conn } from '../conn';
import {
  accountLedger,
  refillPeriod,
  refillReference,
  type AccountRow,
  type AccountSummary,
  type AccountsTable,
  type NewAccount,
  type Refill,
  type RefillRow,
  type RefillRule,
} from '../accounts';
import { balance, transfer } from './ledger';

const COLUMNS = 'a.id, a.name, a.wallet, a.low, a.refill_amount, a.refill_every, a.refill_day, a.refill_by, a.created_at, a.created_by';
const REFILL = 'account_id, period, target, amount, transfer_id, at';
// The key count from keys_by_account, the balance from the ledger's running balances.
const SUMMARY = `SELECT ${COLUMNS}, (SELECT count(*) FROM keys k WHERE k.account_id = a.id) AS keys,
    coalesce((SELECT b.balance FROM account_balances b WHERE b.account = 'account:' || a.id), 0) AS balance
  FROM accounts a`;

const Q = {
  insert: sql(`INSERT INTO accounts (id, name, low, created_at, created_by) VALUES (@id, @name, @low, @created_at, @created_by)`),
  byId: sql(`SELECT ${COLUMNS} FROM accounts a WHERE a.id = ?`),
  byName: sql(`SELECT ${COLUMNS} FROM accounts a WHERE a.name = ?`),
  summary: sql(`${SUMMARY} WHERE a.id = ?`),
  first: sql(`${SUMMARY} ORDER BY a.name LIMIT ?`),
  after: sql(`${SUMMARY} WHERE a.name > ? ORDER BY a.name LIMIT ?`),
  setLow: sql(`UPDATE accounts SET low = ? WHERE id = ?`),
  setWallet: sql(`UPDATE accounts SET wallet = ? WHERE id = ?`),
  // keys_by_account: the account's keys.
  keysWallet: sql(`UPDATE keys SET wallet = ? WHERE account_id = ?`),
  setRefill: sql(`UPDATE accounts SET refill_amount = ?, refill_every = ?, refill_day = ?, refill_by = ? WHERE id = ?`),
  // accounts_with_refill: only the accounts that have a rule.
  withRefill: sql(`SELECT ${COLUMNS} FROM accounts a WHERE a.refill_every IS NOT NULL AND a.id > ? ORDER BY a.id LIMIT ?`),
  refillOf: sql(`SELECT ${REFILL} FROM account_refills WHERE account_id = ? AND period = ?`),
  insertRefill: sql(`INSERT INTO account_refills (${REFILL}) VALUES (?, ?, ?, ?, ?, ?)`),
};

export class SqlAccountsTable implements AccountsTable {
  constructor(private readonly conn: Conn) {}

  async insert(account: NewAccount): Promise<void> {
    await this.conn.run(Q.insert, { ...account });
  }

  byId(id: string): Promise<AccountRow | undefined> {
    return this.conn.get<AccountRow>(Q.byId, [id]);
  }

  byName(name: string): Promise<AccountRow | undefined> {
    return this.conn.get<AccountRow>(Q.byName, [name]);
  }

  async byRef(ref: string): Promise<AccountRow | undefined> {
    return (await this.byId(ref)) ?? this.byName(ref);
  }

  summary(id: string): Promise<AccountSummary | undefined> {
    return this.conn.get<AccountSummary>(Q.summary, [id]);
  }

  page(after: string | null, limit: number): Promise<AccountSummary[]> {
    return after === null ? this.conn.all<AccountSummary>(Q.first, [limit]) : this.conn.all<AccountSummary>(Q.after, [after, limit]);
  }

  async setLow(id: string, low: number | null): Promise<void> {
    await this.conn.run(Q.setLow, [low, id]);
  }

  async setWallet(id: string, wallet: string | null): Promise<void> {
    await this.conn.tx(async (c) => {
      await c.run(Q.setWallet, [wallet, id]);
      await c.run(Q.keysWallet, [wallet, id]);
    });
  }

  async setRefill(id: string, rule: RefillRule | null, by: string): Promise<void> {
    const values = rule === null ? [null, null, null, null] : [rule.amount, rule.every, rule.day, by];
    await this.conn.run(Q.setRefill, [...values, id]);
  }

  withRefill(after: string | null, limit: number): Promise<AccountRow[]> {
    return this.conn.all<AccountRow>(Q.withRefill, [after ?? '', limit]);
  }

  refillOf(id: string, period: string): Promise<RefillRow | undefined> {
    return this.conn.get<RefillRow>(Q.refillOf, [id, period]);
  }

  refill(id: string, at: number): Promise<Refill | null> {
    return this.conn.tx(async (c) => {
      const row = await c.get<AccountRow>(Q.byId, [id]);
      if (row?.refill_amount == null || row.refill_every === null) return null;
      const { period } = refillPeriod({ every: row.refill_every, day: row.refill_day }, at);
      const prior = await c.get<RefillRow>(Q.refillOf, [id, period]);
      if (prior !== undefined) return { ...prior, created: false };
      const account = accountLedger(id);
      const target = row.refill_amount;
      const amount = Math.max(0, target - (await balance(c, account)));
      const postings = [
        { account: 'external', amount: -amount },
        { account, amount },
      ];
      const actor = row.refill_by ?? 'refill';
      const transferId =
        amount === 0 ? null : await transfer(c, { kind: 'refill', at, actor, reference: refillReference(id, period), postings });
      await c.run(Q.insertRefill, [id, period, target, amount, transferId, at]);
      return { account_id: id, period, target, amount, transfer_id: transferId, at, created: true };
    }, 'serial');
  }
}
