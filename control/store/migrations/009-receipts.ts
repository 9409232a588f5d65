/**
 * 9: settlement receipts (docs/design.md §11). One signed receipt per settlement batch, written in the
 * batch's own transaction; the public half of every key that ever signed one.
 *
 * - `receipt_keys`: Ed25519 public keys (`x`, base64url) by `kid` (their RFC 7638
 *   thumbprint). The private key is a file in the data dir, never in the database.
 * - `receipts`: the fields of each batch's receipt as published. `prev` and `root` are hex,
 *   `settled_at` the ISO text that was signed, `sig` base64url.
 * - `outcomes_by_batch` gains `received_at`: a batch's leaves are its calls in settlement
 *   order (received_at, call_id), so a proof and `ledger verify` walk the index in leaf order
 *   instead of sorting. (`call_id` is the table's key, so every index entry ends with it.)
 *
 * Batches settled before this migration get their receipts when the store opens (SQL cannot
 * sign): `ReceiptsTable.open` (`sql/receipts.ts`), in batch order, in one transaction, before anything else.
 */
export default `
  CREATE TABLE receipt_keys (
    kid        TEXT PRIMARY KEY,
    x          TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE receipts (
    batch      INTEGER PRIMARY KEY REFERENCES settlement_batches (id),
    v          INTEGER NOT NULL,
    prev       TEXT NOT NULL,
    root       TEXT NOT NULL,
    tree_size  INTEGER NOT NULL,
    refunds    INTEGER NOT NULL,
    premiums   INTEGER NOT NULL,
    settled_at TEXT NOT NULL,
    kid        TEXT NOT NULL REFERENCES receipt_keys (kid),
    sig        TEXT NOT NULL
  ) STRICT;

  DROP INDEX outcomes_by_batch;
  CREATE INDEX outcomes_by_batch ON outcomes (settled_batch, received_at) WHERE settled_batch IS NOT NULL;
`;
