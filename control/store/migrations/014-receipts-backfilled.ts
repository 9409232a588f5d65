/**
 * 14: the receipts backfill runs once. `meta.receipts_backfilled` records that batches settled
 * before receipts (migration 9) got theirs; from then on a settled batch without a receipt is an
 * integrity failure that halts the settler (`store/receipts.ts`), never a batch to sign on open.
 *
 * An install that already has receipts backfilled at migration 9 time (every open since signed
 * whatever lacked one), so it is marked here. Installs without receipts (new, or settled only
 * with receipts off) are marked by the first open that signs, after its backfill. The data dir
 * holds a second record (`control/receipts/backfill-marker.ts`); either one stops the backfill.
 */
export default `
  INSERT INTO meta (name, value) SELECT 'receipts_backfilled', 1 WHERE EXISTS (SELECT 1 FROM receipts);
`;
