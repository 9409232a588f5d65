/**
 * 4: public reads. Per-endpoint, per-minute rollups of outcomes (counts by outcome and a
 * fixed latency histogram), kept up to date at ingest in the same transaction as the outcome
 * rows, so `/api/v1/providers` sums at most one row per endpoint per minute of its window and
 * never scans raw outcomes. Existing outcomes are rolled up here once.
 *
 * `minute` is `started_at / 60000` (whole minutes since the Unix epoch, UTC). Latency columns
 * count the calls of the failure-rate denominator (every outcome but `client_error`) whose
 * `latency_ms` is at most the bound in the name; `lat_gt_60000` holds the rest. The bounds
 * are `LATENCY_BOUNDS_MS` in `control/store/rollups.ts`.
 *
 * Also: the secret that derives the public opaque ids (HMAC-SHA256 key, created by the store
 * on first open), and an index for the indexer's recent activity (newest call first).
 */
export default `
  CREATE TABLE outcome_rollups (
    endpoint_id    TEXT NOT NULL,
    minute         INTEGER NOT NULL,
    ok             INTEGER NOT NULL DEFAULT 0,
    latency_breach INTEGER NOT NULL DEFAULT 0,
    server_error   INTEGER NOT NULL DEFAULT 0,
    network_error  INTEGER NOT NULL DEFAULT 0,
    schema_mismatch INTEGER NOT NULL DEFAULT 0,
    client_error   INTEGER NOT NULL DEFAULT 0,
    lat_le_1       INTEGER NOT NULL DEFAULT 0,
    lat_le_2       INTEGER NOT NULL DEFAULT 0,
    lat_le_5       INTEGER NOT NULL DEFAULT 0,
    lat_le_10      INTEGER NOT NULL DEFAULT 0,
    lat_le_20      INTEGER NOT NULL DEFAULT 0,
    lat_le_50      INTEGER NOT NULL DEFAULT 0,
    lat_le_100     INTEGER NOT NULL DEFAULT 0,
    lat_le_200     INTEGER NOT NULL DEFAULT 0,
    lat_le_300     INTEGER NOT NULL DEFAULT 0,
    lat_le_500     INTEGER NOT NULL DEFAULT 0,
    lat_le_750     INTEGER NOT NULL DEFAULT 0,
    lat_le_1000    INTEGER NOT NULL DEFAULT 0,
    lat_le_1500    INTEGER NOT NULL DEFAULT 0,
    lat_le_2000    INTEGER NOT NULL DEFAULT 0,
    lat_le_3000    INTEGER NOT NULL DEFAULT 0,
    lat_le_5000    INTEGER NOT NULL DEFAULT 0,
    lat_le_10000   INTEGER NOT NULL DEFAULT 0,
    lat_le_20000   INTEGER NOT NULL DEFAULT 0,
    lat_le_30000   INTEGER NOT NULL DEFAULT 0,
    lat_le_60000   INTEGER NOT NULL DEFAULT 0,
    lat_gt_60000   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, endpoint_id)
  ) STRICT, WITHOUT ROWID;

  INSERT INTO outcome_rollups
  SELECT endpoint_id, minute,
         sum(outcome = 'ok'), sum(outcome = 'latency_breach'), sum(outcome = 'server_error'),
         sum(outcome = 'network_error'), sum(outcome = 'schema_mismatch'), sum(outcome = 'client_error'),
         sum(bucket = 0), sum(bucket = 1), sum(bucket = 2), sum(bucket = 3), sum(bucket = 4),
         sum(bucket = 5), sum(bucket = 6), sum(bucket = 7), sum(bucket = 8), sum(bucket = 9),
         sum(bucket = 10), sum(bucket = 11), sum(bucket = 12), sum(bucket = 13), sum(bucket = 14),
         sum(bucket = 15), sum(bucket = 16), sum(bucket = 17), sum(bucket = 18), sum(bucket = 19),
         sum(bucket = 20)
  FROM (
    SELECT endpoint_id, started_at / 60000 AS minute, outcome,
           CASE
             WHEN outcome = 'client_error' THEN -1
             WHEN latency_ms <= 1 THEN 0
             WHEN latency_ms <= 2 THEN 1
             WHEN latency_ms <= 5 THEN 2
             WHEN latency_ms <= 10 THEN 3
             WHEN latency_ms <= 20 THEN 4
             WHEN latency_ms <= 50 THEN 5
             WHEN latency_ms <= 100 THEN 6
             WHEN latency_ms <= 200 THEN 7
             WHEN latency_ms <= 300 THEN 8
             WHEN latency_ms <= 500 THEN 9
             WHEN latency_ms <= 750 THEN 10
             WHEN latency_ms <= 1000 THEN 11
             WHEN latency_ms <= 1500 THEN 12
             WHEN latency_ms <= 2000 THEN 13
             WHEN latency_ms <= 3000 THEN 14
             WHEN latency_ms <= 5000 THEN 15
             WHEN latency_ms <= 10000 THEN 16
             WHEN latency_ms <= 20000 THEN 17
             WHEN latency_ms <= 30000 THEN 18
             WHEN latency_ms <= 60000 THEN 19
             ELSE 20
           END AS bucket
    FROM outcomes
  )
  GROUP BY endpoint_id, minute;

  -- One row: the HMAC key behind every opaque id on the public API and the indexer.
  CREATE TABLE public_secret (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    secret BLOB NOT NULL CHECK (length(secret) = 32)
  ) STRICT;

  CREATE INDEX outcomes_by_time ON outcomes (started_at, call_id);
`;
