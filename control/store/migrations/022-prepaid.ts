/**
 * 22: prepaid billing (docs/money.md, "Prepaid endpoints").
 *
 * - `endpoints.billing`: how the endpoint's calls are paid: `postpaid` (the premium is taken
 *   from the account when the call settles, whatever it holds: every endpoint before this
 *   migration) or `prepaid` (a gateway admits a keyed call only while the key's account can
 *   cover the premium).
 * - `outcome_records.reserved`, `.instance`: the premium a prepaid call reserved, from the budget
 *   of which gateway instance (protocol/budgets.ts); null for every other call.
 *   `unsettled_outcomes.reserved` repeats it in the settler's queue, where an account's
 *   reservations are summed (`unsettled_reserved_by_key`: only reserved calls are indexed).
 * - `account_escrows`: what each gateway instance holds of each account, as cumulative
 *   counters: `granted` by control, `returned` by the gateway, `spent` by its ingested calls
 *   (held = granted − returned − spent). `wanted_at` is when the instance last asked for
 *   budget, `short_at` when an answer left a waiting call short (others are then asked to
 *   give back); `released_at` when a later instance of the gateway reported its journal drained.
 * - `state_changes.kind` gains `account`: a deposit or refill bumps the state version so that
 *   gateways hear of it (`accounts_funded` in deltas). SQLite cannot alter a CHECK: the table is
 *   rebuilt.
 */
export default `
  CREATE TABLE state_changes_new (
    version INTEGER NOT NULL,
    kind    TEXT NOT NULL CHECK (kind IN ('key', 'endpoint', 'flags', 'limits', 'account')),
    entity  TEXT NOT NULL,
    PRIMARY KEY (version, kind, entity)
  ) STRICT, WITHOUT ROWID;
  INSERT INTO state_changes_new (version, kind, entity) SELECT version, kind, entity FROM state_changes;
  DROP TABLE state_changes;
  ALTER TABLE state_changes_new RENAME TO state_changes;

  ALTER TABLE endpoints ADD COLUMN billing TEXT NOT NULL DEFAULT 'postpaid' CHECK (billing IN ('prepaid', 'postpaid'));

  ALTER TABLE outcome_records ADD COLUMN reserved INTEGER CHECK (reserved > 0);
  ALTER TABLE outcome_records ADD COLUMN instance TEXT;
  ALTER TABLE unsettled_outcomes ADD COLUMN reserved INTEGER CHECK (reserved > 0);
  CREATE INDEX unsettled_reserved_by_key ON unsettled_outcomes (key_id) WHERE reserved IS NOT NULL;

  CREATE TABLE account_escrows (
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    gateway_id  TEXT NOT NULL,
    instance    TEXT NOT NULL,
    granted     INTEGER NOT NULL DEFAULT 0 CHECK (granted >= 0),
    returned    INTEGER NOT NULL DEFAULT 0 CHECK (returned >= 0),
    spent       INTEGER NOT NULL DEFAULT 0 CHECK (spent >= 0),
    wanted_at   INTEGER,
    short_at    INTEGER,
    created_at  INTEGER NOT NULL,
    released_at INTEGER,
    PRIMARY KEY (account_id, gateway_id, instance)
  ) STRICT;
  CREATE INDEX account_escrows_open ON account_escrows (gateway_id, instance) WHERE released_at IS NULL;
  CREATE INDEX account_escrows_short ON account_escrows (short_at) WHERE short_at IS NOT NULL;
`;
