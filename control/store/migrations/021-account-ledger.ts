/**
 * 21: accounts hold the money. Premiums, refunds and payouts post to the key's account's ledger
 * account (`account:<id>`) from now on; `key:<id>` accounts keep their history only.
 *
 * - Transfer kinds `deposit` (external → account: an operator's deposit, its reference unique
 *   per deposit: `ledger_deposit_reference`), `move` (key → account, written here only) and
 *   `refill` (external → account); postings may name `account:<id>`. SQLite cannot alter a
 *   CHECK, so `ledger_transfers` and `ledger_postings` are rebuilt with their indexes, every row
 *   copied as it is (ids kept, the transfers' AUTOINCREMENT sequence with them).
 * - Each key's wallet becomes its account's (every account before this one has one key; were
 *   there several, the oldest key's wallet wins), and `keys.wallet` mirrors its account's from
 *   now on (what the key's view shows).
 * - Each key whose balance is not 0 has it moved to its account: one `move` transfer per key,
 *   either sign (actor `migration`, reference the key's id, at the migration's time), and the
 *   running balances with it: the key's goes to 0, the account's gets it.
 * - Refills (docs/money.md, "Refills"): `accounts.refill_by` is the operator who set the rule
 *   (what each refill is recorded under), and `account_refills` holds one row per account and
 *   period refilled (`2026-11-29` for a daily rule, `2026-11` for a monthly one). Its primary
 *   key is what makes a period's refill happen once, whichever control gets there first: the
 *   `target` the rule had, the `amount` that moved (0 when the available balance was already at
 *   or over it) and the `refill` transfer that moved it, referenced `refill:<account>:<period>`
 *   (`ledger_refill_reference`).
 */
export default `
  CREATE TABLE ledger_transfers_new (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        INTEGER NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('fund', 'premium', 'treasury_fee', 'refund', 'payout', 'deposit', 'move', 'refill')),
    call_id   TEXT,
    batch_id  INTEGER REFERENCES settlement_batches (id),
    reference TEXT,
    actor     TEXT NOT NULL
  ) STRICT;
  INSERT INTO ledger_transfers_new (id, at, kind, call_id, batch_id, reference, actor)
    SELECT id, at, kind, call_id, batch_id, reference, actor FROM ledger_transfers ORDER BY id;

  CREATE TABLE ledger_postings_new (
    transfer_id INTEGER NOT NULL REFERENCES ledger_transfers_new (id),
    account     TEXT NOT NULL CHECK (account IN ('external', 'pool', 'treasury') OR account LIKE 'key:%' OR account LIKE 'account:%'),
    amount      INTEGER NOT NULL CHECK (amount <> 0),
    PRIMARY KEY (transfer_id, account)
  ) STRICT, WITHOUT ROWID;
  INSERT INTO ledger_postings_new (transfer_id, account, amount) SELECT transfer_id, account, amount FROM ledger_postings;

  DROP TABLE ledger_postings;
  DROP TABLE ledger_transfers;
  ALTER TABLE ledger_transfers_new RENAME TO ledger_transfers;
  ALTER TABLE ledger_postings_new RENAME TO ledger_postings;

  CREATE UNIQUE INDEX ledger_one_kind_per_call ON ledger_transfers (call_id, kind) WHERE call_id IS NOT NULL;
  CREATE INDEX ledger_transfers_by_batch ON ledger_transfers (batch_id) WHERE batch_id IS NOT NULL;
  CREATE UNIQUE INDEX ledger_payout_reference ON ledger_transfers (reference) WHERE kind = 'payout';
  CREATE UNIQUE INDEX ledger_deposit_reference ON ledger_transfers (reference) WHERE kind = 'deposit';
  CREATE INDEX ledger_transfers_by_kind ON ledger_transfers (kind);
  CREATE INDEX ledger_postings_by_account ON ledger_postings (account);

  UPDATE accounts SET wallet = (
      SELECT k.wallet FROM keys k WHERE k.account_id = accounts.id AND k.wallet IS NOT NULL ORDER BY k.created_at, k.id LIMIT 1)
    WHERE wallet IS NULL AND EXISTS (SELECT 1 FROM keys k WHERE k.account_id = accounts.id AND k.wallet IS NOT NULL);
  UPDATE keys SET wallet = (SELECT a.wallet FROM accounts a WHERE a.id = keys.account_id);

  INSERT INTO ledger_transfers (at, kind, reference, actor)
    SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER), 'move', k.id, 'migration'
    FROM keys k JOIN account_balances b ON b.account = 'key:' || k.id
    WHERE b.balance <> 0 ORDER BY k.created_at, k.id;
  INSERT INTO ledger_postings (transfer_id, account, amount)
    SELECT t.id, b.account, -b.balance
    FROM ledger_transfers t JOIN account_balances b ON b.account = 'key:' || t.reference WHERE t.kind = 'move';
  INSERT INTO ledger_postings (transfer_id, account, amount)
    SELECT t.id, 'account:' || k.account_id, b.balance
    FROM ledger_transfers t JOIN keys k ON k.id = t.reference JOIN account_balances b ON b.account = 'key:' || k.id
    WHERE t.kind = 'move';
  INSERT INTO account_balances (account, balance)
    SELECT p.account, sum(p.amount) FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
    WHERE t.kind = 'move' AND p.account LIKE 'account:%' GROUP BY p.account
    ON CONFLICT (account) DO UPDATE SET balance = account_balances.balance + excluded.balance;
  UPDATE account_balances SET balance = 0
    WHERE account IN (SELECT p.account FROM ledger_transfers t JOIN ledger_postings p ON p.transfer_id = t.id
                      WHERE t.kind = 'move' AND p.account LIKE 'key:%');

  ALTER TABLE accounts ADD COLUMN refill_by TEXT;
  CREATE TABLE account_refills (
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    period      TEXT NOT NULL,
    target      INTEGER NOT NULL CHECK (target > 0),
    amount      INTEGER NOT NULL CHECK (amount >= 0),
    transfer_id INTEGER REFERENCES ledger_transfers (id),
    at          INTEGER NOT NULL,
    PRIMARY KEY (account_id, period),
    CHECK ((amount = 0) = (transfer_id IS NULL))
  ) STRICT;
  CREATE UNIQUE INDEX ledger_refill_reference ON ledger_transfers (reference) WHERE kind = 'refill';
  CREATE INDEX accounts_with_refill ON accounts (id) WHERE refill_every IS NOT NULL;
`;
