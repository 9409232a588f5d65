/**
 * Accounts hold the money: SQLite's migration 21 (`../../migrations/021-account-ledger.ts`),
 * which says what changes and why. PostgreSQL alters the two CHECKs in place (dropped and
 * added again, wider); the rest is the same: the deposit references' unique index, each key's
 * wallet copied to its account, and each key's non-zero balance moved to its account by one
 * `move` transfer per key; and the refills' table with the rule's operator.
 */
export default `
  ALTER TABLE ledger_transfers DROP CONSTRAINT ledger_transfers_kind_check;
  ALTER TABLE ledger_transfers ADD CONSTRAINT ledger_transfers_kind_check
    CHECK (kind IN ('fund', 'premium', 'treasury_fee', 'refund', 'payout', 'deposit', 'move', 'refill'));
  ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_account_check;
  ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_account_check
    CHECK (account IN ('external', 'pool', 'treasury') OR account LIKE 'key:%' OR account LIKE 'account:%');
  CREATE UNIQUE INDEX ledger_deposit_reference ON ledger_transfers (reference) WHERE kind = 'deposit';

  UPDATE accounts SET wallet = (
      SELECT k.wallet FROM keys k WHERE k.account_id = accounts.id AND k.wallet IS NOT NULL ORDER BY k.created_at, k.id LIMIT 1)
    WHERE wallet IS NULL AND EXISTS (SELECT 1 FROM keys k WHERE k.account_id = accounts.id AND k.wallet IS NOT NULL);
  UPDATE keys SET wallet = (SELECT a.wallet FROM accounts a WHERE a.id = keys.account_id);

  INSERT INTO ledger_transfers (at, kind, reference, actor)
    SELECT CAST(extract(epoch FROM now()) * 1000 AS BIGINT), 'move', k.id, 'migration'
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

  ALTER TABLE accounts ADD COLUMN refill_by TEXT COLLATE "C";
  CREATE TABLE account_refills (
    account_id  TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
    period      TEXT COLLATE "C" NOT NULL,
    target      BIGINT NOT NULL CHECK (target > 0),
    amount      BIGINT NOT NULL CHECK (amount >= 0),
    transfer_id BIGINT REFERENCES ledger_transfers (id),
    at          BIGINT NOT NULL,
    PRIMARY KEY (account_id, period),
    CHECK ((amount = 0) = (transfer_id IS NULL))
  );
  CREATE UNIQUE INDEX ledger_refill_reference ON ledger_transfers (reference) WHERE kind = 'refill';
  CREATE INDEX accounts_with_refill ON accounts (id) WHERE refill_every IS NOT NULL;
`;
