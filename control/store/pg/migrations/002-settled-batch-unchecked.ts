/**
 * 2: `outcomes.settled_batch` loses its foreign key to `settlement_batches`.
 *
 * Settlement marks thousands of calls per batch with one UPDATE, and PostgreSQL checks a
 * foreign key with a trigger per changed row (a `SELECT … FOR KEY SHARE` of the batch row):
 * about a third of settlement's server time, for a reference the store already guarantees.
 * The batch row is inserted in the same transaction, under the writer lock, just before its
 * calls are marked (`pg/settlement-group.ts`), and batches are never deleted. `ledger verify` checks
 * that every settled call names a batch that exists (`sql/ledger-verify.ts`, "every batch equals
 * the sum of its calls"), so a broken reference would not go unnoticed.
 *
 * SQLite keeps its foreign key: there the check is an in-process lookup.
 */
export default `
  ALTER TABLE outcomes DROP CONSTRAINT outcomes_settled_batch_fkey;
`;
