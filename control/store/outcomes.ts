/**
 * Call outcomes shipped by gateways. Inserts are idempotent by `call_id` and batched: one
 * transaction per batch, so an acked batch is durable as a whole. The same transaction adds
 * each new call to the settler's queue (`unsettled_outcomes`) and the newly inserted rows to
 * the per-minute rollups (`rollups.ts`). Only a stored call id is skipped: a row that breaks
 * any other constraint fails the whole batch (the wire schema keeps such rows out; a silently
 * dropped outcome is a lost one). A call id twice in one batch is stored once, as first
 * received. Call ids are stored in lowercase (`canonicalCallId`), so an id shipped in capitals
 * is the same call. How each database does it: `sql/outcomes.ts`.
 */
import type { OutcomeRecord } from '../../protocol/outcome';

/** Rows per multi-row INSERT on SQLite (10 parameters each; well under SQLite's 32,766). */
export const CHUNK_ROWS = 100;

export interface OutcomesTable {
  /**
   * Store a batch received at `at`, its queue entries and its rollups, in one transaction;
   * answers how many calls were new. Only rows actually inserted reach the rollups: a replayed
   * call never counts twice.
   */
  ingest(records: OutcomeRecord[], at: number): Promise<number>;
  /** How many calls are stored. */
  count(): Promise<number>;
  /** The stored call `callId` (any case), as the `outcomes` view has it, if any. */
  byCallId(callId: string): Promise<Record<string, unknown> | undefined>;
}
