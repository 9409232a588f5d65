/** Per-endpoint, per-minute outcome rollups (`../rollups.ts`), on either database; ingest writes them (`outcomes.ts`). */
import { sql, type Conn } from '../conn';
import {
  COUNT_COLUMNS,
  MINUTE_MS,
  OUTCOME_COLUMNS,
  slotOf,
  windowOf,
  type EndpointSlot,
  type EndpointWindow,
  type RollupsTable,
} from '../rollups';

const sums = (columns: readonly string[]) => columns.map((c) => `CAST(sum(${c}) AS BIGINT)`).join(', ');
/** Integer division of whole minutes, the last slot taking the rest (`min` is PostgreSQL's `LEAST`). */
const slots = (least: string) =>
  `SELECT endpoint_id, ${least}(CAST((minute - @from) / @per AS INTEGER), CAST(@last AS INTEGER)) AS slot, ${sums(OUTCOME_COLUMNS)}
   FROM outcome_rollups WHERE minute >= @from GROUP BY endpoint_id, slot ORDER BY endpoint_id, slot`;

const Q = {
  window: sql(
    `SELECT endpoint_id, ${sums(COUNT_COLUMNS)} FROM outcome_rollups WHERE minute >= ? GROUP BY endpoint_id ORDER BY endpoint_id`,
  ),
  slots: sql({ sqlite: slots('min'), pg: slots('LEAST') }),
};

export class SqlRollupsTable implements RollupsTable {
  constructor(private readonly conn: Conn) {}

  async slots(fromMs: number, slotMinutes: number, slots: number): Promise<EndpointSlot[]> {
    const from = Math.ceil(fromMs / MINUTE_MS);
    return (await this.conn.raw(Q.slots, { from, per: slotMinutes, last: slots - 1 })).map(slotOf);
  }

  async window(fromMs: number): Promise<EndpointWindow[]> {
    return (await this.conn.raw(Q.window, [Math.ceil(fromMs / MINUTE_MS)])).map(windowOf);
  }
}
