/**
 * 23: the coverage pool's capital, owned by liquidity providers (docs/money.md, "Pool capital").
 *
 * - `liquidity_providers`: who owns the pool's capital, in shares (`shares`, the provider's
 *   running total of its share events). `operator` is built in: `pool fund` deposits into it,
 *   and it receives, as of this migration, the pool's whole balance (everything funded and
 *   earned so far was the operator's) at one micro-unit a share.
 * - `lp_share_events`: every change of a provider's shares, in order. `deposit` mints shares
 *   for the money of a `fund` or `lp_deposit` transfer; `withdrawal` burns them for an
 *   `lp_withdrawal` transfer (one payment of a queued withdrawal); `migration` is the operator's
 *   opening position; `unowned` gives the operator capital nobody held shares of (premiums
 *   earned while no provider held any), and `write_off` closes positions worth nothing (the
 *   pool at 0), both right before a deposit. `capital_before` and `shares_before` are the pool's
 *   balance over the transfers before `before_transfer` and the shares outstanding then: the
 *   figures the event's rounding used, which `ledger verify` recomputes from the postings.
 *   A withdrawal also records the pool's `exposure` and `locked` capital when it was paid.
 * - `lp_withdrawals`: the queue. A request is for `amount` (null: the whole position), due at
 *   `due_at` (its notice), paid oldest due first, in part while free capital is short (`paid`
 *   so far), until `paid` or `cancelled`.
 * - `pool_days`: the pool's capital, the highest exposure seen and the capital locked then, per
 *   UTC day, for the public pages' 90-day chart (sampled every minute by each control).
 * - `ledger_transfers.kind` gains `lp_deposit` (external → pool, its reference unique among
 *   them) and `lp_withdrawal` (pool → external).
 * - `endpoints.refund_cap_per_call`, `.refund_cap_per_batch` (0 = none), and the clamps they
 *   mark, `call_capped` and `batch_capped`, on `settled_calls`.
 * - `unsettled_covered`: the queue's covered failures (every outcome but `ok`, `client_error`, `caller_error`,
 *   written so both databases print the predicate alike), which the pool's exposure counts.
 *
 * SQLite cannot alter a CHECK: `ledger_transfers`, `ledger_postings` and `settled_calls` are
 * rebuilt (and the `outcomes` view over them made again).
 */
export default `
  CREATE TABLE ledger_transfers_new (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        INTEGER NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('fund', 'premium', 'treasury_fee', 'refund', 'payout', 'deposit', 'move', 'refill',
                                            'lp_deposit', 'lp_withdrawal')),
    call_id   TEXT,
    batch_id  INTEGER REFERENCES settlement_batches (id),
    reference TEXT,
    actor     TEXT NOT NULL
  ) STRICT;
  INSERT INTO ledger_transfers_new (id, at, kind, call_id, batch_id, reference, actor)
    SELECT id, at, kind, call_id, batch_id, reference, actor FROM ledger_transfers ORDER BY id;
  UPDATE sqlite_sequence SET seq = (SELECT seq FROM sqlite_sequence WHERE name = 'ledger_transfers')
    WHERE name = 'ledger_transfers_new' AND EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'ledger_transfers');

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
  CREATE UNIQUE INDEX ledger_refill_reference ON ledger_transfers (reference) WHERE kind = 'refill';
  CREATE UNIQUE INDEX ledger_lp_deposit_reference ON ledger_transfers (reference) WHERE kind = 'lp_deposit';
  CREATE INDEX ledger_transfers_by_kind ON ledger_transfers (kind);
  CREATE INDEX ledger_postings_by_account ON ledger_postings (account);

  DROP VIEW outcomes;
  CREATE TABLE settled_calls_new (
    call_id     TEXT PRIMARY KEY,
    batch_id    INTEGER NOT NULL REFERENCES settlement_batches (id),
    endpoint_id TEXT NOT NULL,
    key_id      TEXT,
    outcome     TEXT NOT NULL,
    started_at  INTEGER NOT NULL,
    received_at INTEGER NOT NULL,
    premium     INTEGER NOT NULL,
    refund      INTEGER NOT NULL,
    refund_owed INTEGER NOT NULL,
    clamp       TEXT CHECK (clamp IN ('pool_depleted', 'cap_clamped', 'call_capped', 'batch_capped'))
  ) STRICT, WITHOUT ROWID;
  INSERT INTO settled_calls_new SELECT call_id, batch_id, endpoint_id, key_id, outcome, started_at, received_at,
    premium, refund, refund_owed, clamp FROM settled_calls;
  DROP TABLE settled_calls;
  ALTER TABLE settled_calls_new RENAME TO settled_calls;
  CREATE INDEX settled_calls_by_batch ON settled_calls (batch_id, received_at, call_id);
  CREATE INDEX settled_calls_clamped ON settled_calls (clamp) WHERE clamp IS NOT NULL;
  CREATE INDEX settled_calls_refunded ON settled_calls (started_at, call_id) WHERE refund_owed > 0;
  CREATE INDEX settled_calls_refunded_by_endpoint ON settled_calls (endpoint_id, started_at, call_id) WHERE refund_owed > 0;
  CREATE VIEW outcomes AS
    SELECT o.call_id, o.key_id, o.endpoint_id, o.method, o.status, o.outcome, o.latency_ms, o.started_at, o.gateway_id,
           o.received_at, s.batch_id AS settled_batch, s.premium, s.refund, s.refund_owed, s.clamp
    FROM outcome_records o LEFT JOIN settled_calls s ON s.call_id = o.call_id;

  ALTER TABLE endpoints ADD COLUMN refund_cap_per_call INTEGER NOT NULL DEFAULT 0 CHECK (refund_cap_per_call >= 0);
  ALTER TABLE endpoints ADD COLUMN refund_cap_per_batch INTEGER NOT NULL DEFAULT 0 CHECK (refund_cap_per_batch >= 0);

  CREATE INDEX unsettled_covered ON unsettled_outcomes (endpoint_id, started_at)
    WHERE key_id IS NOT NULL AND outcome <> 'ok' AND outcome <> 'client_error' AND outcome <> 'caller_error';

  CREATE TABLE liquidity_providers (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    shares     INTEGER NOT NULL DEFAULT 0 CHECK (shares >= 0),
    created_at INTEGER NOT NULL,
    created_by TEXT NOT NULL
  ) STRICT;

  CREATE TABLE lp_withdrawals (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    provider_id  TEXT NOT NULL REFERENCES liquidity_providers (id),
    amount       INTEGER CHECK (amount > 0),
    paid         INTEGER NOT NULL DEFAULT 0 CHECK (paid >= 0),
    status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'paid', 'cancelled')),
    requested_at INTEGER NOT NULL,
    requested_by TEXT NOT NULL,
    due_at       INTEGER NOT NULL,
    closed_at    INTEGER,
    closed_by    TEXT,
    CHECK (amount IS NULL OR paid <= amount)
  ) STRICT;
  CREATE INDEX lp_withdrawals_pending ON lp_withdrawals (due_at, id) WHERE status = 'pending';
  CREATE INDEX lp_withdrawals_by_provider ON lp_withdrawals (provider_id, id);

  CREATE TABLE lp_share_events (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    provider_id     TEXT NOT NULL REFERENCES liquidity_providers (id),
    kind            TEXT NOT NULL CHECK (kind IN ('migration', 'deposit', 'withdrawal', 'unowned', 'write_off')),
    shares          INTEGER NOT NULL,
    amount          INTEGER NOT NULL CHECK (amount >= 0),
    capital_before  INTEGER NOT NULL,
    shares_before   INTEGER NOT NULL CHECK (shares_before >= 0),
    before_transfer INTEGER NOT NULL,
    transfer_id     INTEGER REFERENCES ledger_transfers (id),
    withdrawal_id   INTEGER REFERENCES lp_withdrawals (id),
    exposure        INTEGER,
    locked          INTEGER,
    at              INTEGER NOT NULL,
    CHECK ((kind IN ('deposit', 'withdrawal')) = (transfer_id IS NOT NULL)),
    CHECK ((kind = 'withdrawal') = (withdrawal_id IS NOT NULL AND exposure IS NOT NULL AND locked IS NOT NULL))
  ) STRICT;
  CREATE UNIQUE INDEX lp_share_events_transfer ON lp_share_events (transfer_id) WHERE transfer_id IS NOT NULL;
  CREATE INDEX lp_share_events_by_provider ON lp_share_events (provider_id, id);

  CREATE TABLE pool_days (
    day      TEXT PRIMARY KEY,
    capital  INTEGER NOT NULL,
    exposure INTEGER NOT NULL CHECK (exposure >= 0),
    locked   INTEGER NOT NULL CHECK (locked >= 0),
    at       INTEGER NOT NULL
  ) STRICT;

  INSERT INTO liquidity_providers (id, name, shares, created_at, created_by)
    SELECT 'operator', 'operator', max(coalesce((SELECT balance FROM account_balances WHERE account = 'pool'), 0), 0),
           CAST(unixepoch('subsec') * 1000 AS INTEGER), 'migration';
  INSERT INTO lp_share_events (provider_id, kind, shares, amount, capital_before, shares_before, before_transfer, at)
    SELECT 'operator', 'migration', shares, shares, shares, 0,
           coalesce((SELECT max(id) FROM ledger_transfers), 0) + 1, created_at
    FROM liquidity_providers WHERE id = 'operator';
`;
