/** Prepaid billing: SQLite's migration 22 (`../../migrations/022-prepaid.ts`), which says what each column holds. */
export default `
  ALTER TABLE state_changes DROP CONSTRAINT state_changes_kind_check;
  ALTER TABLE state_changes ADD CONSTRAINT state_changes_kind_check CHECK (kind IN ('key', 'endpoint', 'flags', 'limits', 'account'));

  ALTER TABLE endpoints ADD COLUMN billing TEXT COLLATE "C" NOT NULL DEFAULT 'postpaid' CHECK (billing IN ('prepaid', 'postpaid'));

  ALTER TABLE outcome_records ADD COLUMN reserved BIGINT CHECK (reserved > 0);
  ALTER TABLE outcome_records ADD COLUMN instance TEXT COLLATE "C";
  ALTER TABLE unsettled_outcomes ADD COLUMN reserved BIGINT CHECK (reserved > 0);
  CREATE INDEX unsettled_reserved_by_key ON unsettled_outcomes (key_id) WHERE reserved IS NOT NULL;

  CREATE TABLE account_escrows (
    account_id  TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
    gateway_id  TEXT COLLATE "C" NOT NULL,
    instance    TEXT COLLATE "C" NOT NULL,
    granted     BIGINT NOT NULL DEFAULT 0 CHECK (granted >= 0),
    returned    BIGINT NOT NULL DEFAULT 0 CHECK (returned >= 0),
    spent       BIGINT NOT NULL DEFAULT 0 CHECK (spent >= 0),
    wanted_at   BIGINT,
    short_at    BIGINT,
    created_at  BIGINT NOT NULL,
    released_at BIGINT,
    PRIMARY KEY (account_id, gateway_id, instance)
  );
  CREATE INDEX account_escrows_open ON account_escrows (gateway_id, instance) WHERE released_at IS NULL;
  CREATE INDEX account_escrows_short ON account_escrows (short_at) WHERE short_at IS NOT NULL;
`;
