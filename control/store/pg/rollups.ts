/**
 * Per-endpoint, per-minute rollups of call outcomes on PostgreSQL (`../rollups.ts` is the
 * SQLite twin and holds the grouping and row mapping both use). Outcome ingest adds the rows it
 * inserted with `ROLLUP_UPSERT`, inside its own statement (`outcomes.ts`); `add` does the same
 * for rows grouped in JS. Either way it is one upsert for all of a batch's endpoint-minutes,
 * taken in (minute, endpoint) order: two batches ingested at once lock the rows they share in
 * the same order, so they wait for each other, never deadlock.
 */
import type { Async } from '../seam';
import {
  COUNT_COLUMNS,
  MINUTE_MS,
  OUTCOME_COLUMNS,
  rollupGroups,
  slotOf,
  windowOf,
  type EndpointSlot,
  type EndpointWindow,
  type RollupInput,
  type RollupsTable,
} from '../rollups';
import { sql, type PgConn } from './conn';

/**
 * Add the rows of `groups` (a query of endpoint_id, minute and the `COUNT_COLUMNS`) to the
 * rollups: `ORDER BY` fixes the order rows are locked in. Outcome ingest runs it inside its
 * insert statement (`outcomes.ts`).
 */
export const ROLLUP_UPSERT = (groups: string) =>
  `INSERT INTO outcome_rollups (endpoint_id, minute, ${COUNT_COLUMNS.join(', ')})
   SELECT * FROM (${groups}) AS g ORDER BY minute, endpoint_id COLLATE "C"
   ON CONFLICT (minute, endpoint_id) DO UPDATE SET
     ${COUNT_COLUMNS.map((c) => `${c} = outcome_rollups.${c} + excluded.${c}`).join(', ')}`;

const Q = {
  // One array per column (`unnest` zips them into rows).
  upsert: sql(
    ROLLUP_UPSERT(
      `SELECT * FROM unnest(?::text[], ?::bigint[], ${COUNT_COLUMNS.map(() => '?::bigint[]').join(', ')})
       AS u (endpoint_id, minute, ${COUNT_COLUMNS.join(', ')})`,
    ),
  ),
  window: sql(
    `SELECT endpoint_id, ${COUNT_COLUMNS.map((c) => `sum(${c})::bigint`).join(', ')}
     FROM outcome_rollups WHERE minute >= ? GROUP BY endpoint_id ORDER BY endpoint_id`,
  ),
  slots: sql(
    `SELECT endpoint_id, LEAST((minute - @from::bigint) / @per::bigint, @last::bigint) AS slot,
            ${OUTCOME_COLUMNS.map((c) => `sum(${c})::bigint`).join(', ')}
     FROM outcome_rollups WHERE minute >= @from::bigint GROUP BY endpoint_id, slot ORDER BY endpoint_id, slot`,
  ),
};

/** Add inserted outcomes to the rollups on `conn` (inside the ingest transaction): one statement. */
export async function addRollups(conn: PgConn, rows: readonly RollupInput[]): Promise<void> {
  const groups = rollupGroups(rows);
  if (groups.length === 0) return;
  const columns = COUNT_COLUMNS.map((_, i) => groups.map((g) => g.counts[i]!));
  await conn.run(Q.upsert, [groups.map((g) => g.endpoint_id), groups.map((g) => g.minute), ...columns]);
}

export class PgRollupsTable implements Async<RollupsTable> {
  constructor(private readonly conn: PgConn) {}

  /** Add inserted outcomes (call inside the ingest transaction). One upsert for every endpoint-minute. */
  add(rows: readonly RollupInput[]): Promise<void> {
    return addRollups(this.conn, rows);
  }

  /** As `RollupsTable.slots`: outcome counts per endpoint and slot, oldest slot first. */
  async slots(fromMs: number, slotMinutes: number, slots: number): Promise<EndpointSlot[]> {
    const from = Math.ceil(fromMs / MINUTE_MS);
    return (await this.conn.raw(Q.slots, { from, per: slotMinutes, last: slots - 1 })).map(slotOf);
  }

  /** As `RollupsTable.window`: sums per endpoint over the whole minutes from `fromMs`. */
  async window(fromMs: number): Promise<EndpointWindow[]> {
    return (await this.conn.raw(Q.window, [Math.ceil(fromMs / MINUTE_MS)])).map(windowOf);
  }
}
