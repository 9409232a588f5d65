/** Accounts (`../accounts.ts`), on either database. */
import { sql, type Conn } from '../conn';
import { type AccountRow, type AccountSummary, type AccountsTable, type NewAccount } from '../accounts';

const COLUMNS = 'a.id, a.name, a.wallet, a.low, a.refill_amount, a.refill_every, a.refill_day, a.created_at, a.created_by';
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
}
