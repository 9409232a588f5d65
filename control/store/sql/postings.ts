/**
 * A ledger transfer as one statement sequence on a connection: its row, its postings and the
 * balances they move, checked first (`checkTransfer`); and one account's balance. The ledger
 * (`ledger.ts`), the settlement, accounts and liquidity providers (`lps.ts`) all write through it.
 */
import { sql, type Conn } from '../conn';
import { checkTransfer, type TransferInput } from '../ledger';

const Q = {
  transfer: sql(`INSERT INTO ledger_transfers (at, kind, call_id, batch_id, reference, actor) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`),
  // A transfer's postings, `[account, amount]` pairs in one JSON array, written, then the
  // balances they move; an account's row is created on its first move. Not an upsert: the
  // pool's CHECK (balance ≥ 0) would be tested on the would-be inserted row.
  postings: sql({
    sqlite: `INSERT INTO ledger_postings (transfer_id, account, amount) SELECT CAST(? AS BIGINT), value ->> 0, value ->> 1 FROM json_each(?)`,
    pg: `INSERT INTO ledger_postings (transfer_id, account, amount) SELECT CAST(? AS BIGINT), p ->> 0, (p ->> 1)::bigint FROM json_array_elements(?::json) p`,
  }),
  addBalances: sql({
    sqlite: `UPDATE account_balances SET balance = balance + m.value ->> 1 FROM json_each(?) m WHERE account = m.value ->> 0`,
    pg: `UPDATE account_balances SET balance = balance + (p ->> 1)::bigint FROM json_array_elements(?::json) p WHERE account = p ->> 0`,
  }),
  newBalances: sql({
    sqlite: `INSERT INTO account_balances (account, balance) SELECT value ->> 0, value ->> 1 FROM json_each(@moves)
             WHERE NOT EXISTS (SELECT 1 FROM account_balances WHERE account = value ->> 0)`,
    pg: `INSERT INTO account_balances (account, balance) SELECT p ->> 0, (p ->> 1)::bigint FROM json_array_elements(@moves::json) p
         WHERE NOT EXISTS (SELECT 1 FROM account_balances WHERE account = p ->> 0)`,
  }),
  balance: sql(`SELECT balance FROM account_balances WHERE account = ?`),
};

/** Record `input` on `conn` (inside a transaction): its row, its postings, the balances they move. Answers its id. */
export async function transfer(conn: Conn, input: TransferInput): Promise<number> {
  checkTransfer(input);
  const { at, kind, callId, batchId, reference, actor } = input;
  const id = (await conn.value<number>(Q.transfer, [at, kind, callId ?? null, batchId ?? null, reference ?? null, actor]))!;
  const moves = JSON.stringify(input.postings.map((p) => [p.account, p.amount]));
  await conn.run(Q.postings, [id, moves]);
  if ((await conn.run(Q.addBalances, [moves])) < input.postings.length) await conn.run(Q.newBalances, { moves });
  return id;
}

/** The balance of `account` on `conn` (0 for an account that never moved). */
export async function balance(conn: Conn, account: string): Promise<number> {
  return (await conn.value<number>(Q.balance, [account])) ?? 0;
}
