/**
 * `svcctl store copy --json`: what was copied from a data dir's SQLite store into PostgreSQL,
 * and the target's verification (the checks of `svcctl ledger verify` and `svcctl receipts
 * verify`, run on the store the copy wrote).
 */
import { z } from 'zod';
import { ReceiptsVerifyView } from './receipts';
import { LedgerVerifyView } from './settlement';
import { Count } from './wire';

/** The receipt chain checked on a store: `receipts verify`'s answer without the indexer and JWKS source. */
export const StoreReceiptsVerifyView = ReceiptsVerifyView.omit({ indexer: true, jwks: true });
export type StoreReceiptsVerifyView = z.infer<typeof StoreReceiptsVerifyView>;

/** Both verifiers on one store; `ok` when both pass. */
export const StoreVerifyView = z.strictObject({
  ok: z.boolean(),
  ledger: LedgerVerifyView,
  receipts: StoreReceiptsVerifyView,
});
export type StoreVerifyView = z.infer<typeof StoreVerifyView>;

export const StoreCopyView = z.strictObject({
  /** True when the copy committed and both verifiers passed on the target. */
  ok: z.boolean(),
  /** The SQLite file read. */
  source: z.string(),
  /** The PostgreSQL database written, its password masked. */
  target: z.string(),
  /** Every table, in the order copied (parents before the tables that reference them). */
  tables: z.array(z.strictObject({ name: z.string(), rows: Count })),
  /** Rows copied over all tables. */
  rows: Count,
  verify: StoreVerifyView,
});
export type StoreCopyView = z.infer<typeof StoreCopyView>;
