/**
 * 3: settlement. A double-entry ledger (transfers with postings that sum to zero), cached
 * account balances, settlement batches, and the settlement fields of each outcome.
 *
 * Accounts: `external` (money entering or leaving svc), `pool` (the coverage pool),
 * `treasury`, and `key:<key id>` per key. A posting's amount is signed: + credits the account,
 * − debits it. Every transfer's postings sum to zero, so all balances always sum to zero.
 * At most one transfer of each kind per call (`ledger_one_kind_per_call`) makes settlement
 * idempotent by call id even if a batch were replayed.
 */
export default `
  CREATE TABLE settlement_batches (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id   TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    calls         INTEGER NOT NULL CHECK (calls > 0),
    premiums      INTEGER NOT NULL CHECK (premiums >= 0),
    treasury_fees INTEGER NOT NULL CHECK (treasury_fees >= 0),
    refunds       INTEGER NOT NULL CHECK (refunds >= 0),
    refunds_owed  INTEGER NOT NULL CHECK (refunds_owed >= refunds),
    clamped_calls INTEGER NOT NULL CHECK (clamped_calls >= 0)
  ) STRICT;

  ALTER TABLE outcomes ADD COLUMN settled_batch INTEGER REFERENCES settlement_batches (id);
  -- Set when settled: the premium collected, the refund paid, the refund owed before clamping.
  ALTER TABLE outcomes ADD COLUMN premium INTEGER;
  ALTER TABLE outcomes ADD COLUMN refund INTEGER;
  ALTER TABLE outcomes ADD COLUMN refund_owed INTEGER;
  ALTER TABLE outcomes ADD COLUMN clamp TEXT CHECK (clamp IN ('pool_depleted', 'cap_clamped'));
  CREATE INDEX outcomes_unsettled ON outcomes (endpoint_id, received_at, call_id) WHERE settled_batch IS NULL;
  CREATE INDEX outcomes_by_batch ON outcomes (settled_batch) WHERE settled_batch IS NOT NULL;

  CREATE TABLE ledger_transfers (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        INTEGER NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('fund', 'premium', 'treasury_fee', 'refund', 'payout')),
    call_id   TEXT,
    batch_id  INTEGER REFERENCES settlement_batches (id),
    reference TEXT,
    actor     TEXT NOT NULL
  ) STRICT;
  CREATE UNIQUE INDEX ledger_one_kind_per_call ON ledger_transfers (call_id, kind) WHERE call_id IS NOT NULL;
  CREATE INDEX ledger_transfers_by_batch ON ledger_transfers (batch_id) WHERE batch_id IS NOT NULL;

  CREATE TABLE ledger_postings (
    transfer_id INTEGER NOT NULL REFERENCES ledger_transfers (id),
    account     TEXT NOT NULL CHECK (account IN ('external', 'pool', 'treasury') OR account LIKE 'key:%'),
    amount      INTEGER NOT NULL CHECK (amount <> 0),
    PRIMARY KEY (transfer_id, account)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX ledger_postings_by_account ON ledger_postings (account);

  -- Running balance per account, updated in the same transaction as each posting.
  CREATE TABLE account_balances (
    account TEXT PRIMARY KEY,
    balance INTEGER NOT NULL,
    CHECK (account <> 'pool' OR balance >= 0)
  ) STRICT, WITHOUT ROWID;
  INSERT INTO account_balances (account, balance) VALUES ('external', 0), ('pool', 0), ('treasury', 0);
`;
