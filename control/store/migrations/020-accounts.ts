/**
 * 20: accounts. Every key belongs to one (docs/money.md, "Accounts"): several keys may share
 * an account, and its balance is the ledger account `account:<id>`.
 *
 * - `accounts`: the id (`acc_…`), a unique name operators use, the payout wallet (the account's,
 *   not a key's), a low-balance threshold, and the refill rule: `refill_amount` every `day` or
 *   `month` (on `refill_day`, the month's last day when the month is shorter), or none.
 * - `keys.account_id`: the key's account, set when the key is issued and never changed.
 *
 * Every existing key gets an account of its own, named after the key, so an install keeps one
 * key, one account: `acc_` and the key id's random part (`key_…`), or `acc_` and the whole id.
 */
export default `
  CREATE TABLE accounts (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    wallet        TEXT,
    low           INTEGER CHECK (low >= 0),
    refill_amount INTEGER CHECK (refill_amount > 0),
    refill_every  TEXT CHECK (refill_every IN ('day', 'month')),
    refill_day    INTEGER CHECK (refill_day BETWEEN 1 AND 31),
    created_at    INTEGER NOT NULL,
    created_by    TEXT NOT NULL,
    CHECK ((refill_amount IS NULL) = (refill_every IS NULL)),
    CHECK (refill_day IS NULL OR refill_every = 'month')
  ) STRICT;
  ALTER TABLE keys ADD COLUMN account_id TEXT REFERENCES accounts (id);
  INSERT INTO accounts (id, name, created_at, created_by)
    SELECT CASE WHEN id LIKE 'key\\_%' ESCAPE '\\' THEN 'acc_' || substr(id, 5) ELSE 'acc_' || id END, id, created_at, created_by
    FROM keys;
  UPDATE keys SET account_id = CASE WHEN id LIKE 'key\\_%' ESCAPE '\\' THEN 'acc_' || substr(id, 5) ELSE 'acc_' || id END;
  CREATE INDEX keys_by_account ON keys (account_id);
`;
