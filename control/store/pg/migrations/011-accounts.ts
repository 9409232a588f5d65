/**
 * Accounts, and the account of every key: SQLite's migration 20 (`../../migrations/020-accounts.ts`),
 * which says what each column holds.
 */
export default `
  CREATE TABLE accounts (
    id            TEXT COLLATE "C" PRIMARY KEY,
    name          TEXT COLLATE "C" NOT NULL UNIQUE,
    wallet        TEXT COLLATE "C",
    low           BIGINT CHECK (low >= 0),
    refill_amount BIGINT CHECK (refill_amount > 0),
    refill_every  TEXT COLLATE "C" CHECK (refill_every IN ('day', 'month')),
    refill_day    BIGINT CHECK (refill_day BETWEEN 1 AND 31),
    created_at    BIGINT NOT NULL,
    created_by    TEXT COLLATE "C" NOT NULL,
    CHECK ((refill_amount IS NULL) = (refill_every IS NULL)),
    CHECK (refill_day IS NULL OR refill_every = 'month')
  );
  ALTER TABLE keys ADD COLUMN account_id TEXT COLLATE "C" REFERENCES accounts (id);
  INSERT INTO accounts (id, name, created_at, created_by)
    SELECT CASE WHEN id LIKE 'key\\_%' ESCAPE '\\' THEN 'acc_' || substr(id, 5) ELSE 'acc_' || id END, id, created_at, created_by
    FROM keys;
  UPDATE keys SET account_id = CASE WHEN id LIKE 'key\\_%' ESCAPE '\\' THEN 'acc_' || substr(id, 5) ELSE 'acc_' || id END;
  CREATE INDEX keys_by_account ON keys (account_id);
`;
