/**
 * Call outcomes shipped by gateways, on PostgreSQL (`../outcomes.ts` is the SQLite twin).
 * Inserts are idempotent by `call_id` and batched: one transaction per batch, so an acked batch
 * is durable as a whole, and the same transaction adds the newly inserted rows to the
 * per-minute rollups (`rollups.ts`).
 *
 * A batch is two statements whatever its size: one INSERT of every row (the columns go as
 * arrays that `unnest` zips into rows) that skips the call ids already stored and returns what
 * the rollups need of the rows it did insert, then one rollup upsert of those. A call id twice
 * in one batch is stored once, as first received (rows go in in (call id, position) order).
 * Only a stored call id is skipped: a row that breaks any other constraint fails the whole
 * batch (the wire schema keeps such rows out; a silently dropped outcome is a lost one).
 *
 * Ingest does not take the writer lock: batches run side by side, and rows are inserted in
 * call id order so two batches holding the same calls (a shipper's retry while its first try
 * still runs) wait for each other rather than deadlock; the rollups lock theirs in order too.
 */
import type { OutcomeRecord } from '../../../protocol/outcome';
import type { OutcomesTable } from '../outcomes';
import type { RollupInput } from '../rollups';
import type { Async } from '../seam';
import { sql, type PgConn } from './conn';
import { addRollups, type PgRollupsTable } from './rollups';

const Q = {
  insert: sql(
    `INSERT INTO outcomes (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at)
     SELECT call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, @received_at::bigint
     FROM unnest(@call_id::text[], @key_id::text[], @endpoint_id::text[], @method::text[], @status::bigint[],
                 @outcome::text[], @latency_ms::bigint[], @started_at::bigint[], @gateway_id::text[]) WITH ORDINALITY
       AS r (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, n)
     ORDER BY call_id COLLATE "C", n
     ON CONFLICT (call_id) DO NOTHING
     RETURNING endpoint_id, started_at AS started_ms, outcome, latency_ms`,
  ),
  count: sql(`SELECT count(*) FROM outcomes`),
  byId: sql(`SELECT * FROM outcomes WHERE call_id = ?`),
};

/** A batch's parameters: one array per column. */
function columnsOf(records: readonly OutcomeRecord[], receivedAt: number): Record<string, unknown> {
  const n = records.length;
  const callId = new Array<string>(n);
  const keyId = new Array<string | null>(n);
  const endpointId = new Array<string>(n);
  const method = new Array<string>(n);
  const status = new Array<number>(n);
  const outcome = new Array<string>(n);
  const latency = new Array<number>(n);
  const started = new Array<number>(n);
  const gatewayId = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const r = records[i]!;
    callId[i] = r.call_id;
    keyId[i] = r.key_id;
    endpointId[i] = r.endpoint_id;
    method[i] = r.method;
    status[i] = r.status;
    outcome[i] = r.outcome;
    latency[i] = r.latency_ms;
    started[i] = Date.parse(r.started_at);
    gatewayId[i] = r.gateway_id;
  }
  return {
    call_id: callId,
    key_id: keyId,
    endpoint_id: endpointId,
    method,
    status,
    outcome,
    latency_ms: latency,
    started_at: started,
    gateway_id: gatewayId,
    received_at: receivedAt,
  };
}

export class PgOutcomesTable implements Async<OutcomesTable> {
  constructor(
    private readonly conn: PgConn,
    private readonly rollups: PgRollupsTable,
  ) {}

  /** Store a batch in one transaction; returns how many were new. */
  async ingest(records: OutcomeRecord[], at: number): Promise<number> {
    if (records.length === 0) return 0;
    const params = columnsOf(records, at);
    return this.conn.tx(async (c) => {
      const inserted = await c.all<RollupInput>(Q.insert, params);
      // Only rows actually inserted reach the rollups: a replayed call never counts twice. They
      // go through this transaction's connection (`this.rollups` runs on `this.conn`, the pool
      // when the batch is not part of a caller's transaction).
      if (c === this.conn) await this.rollups.add(inserted);
      else await addRollups(c, inserted);
      return inserted.length;
    });
  }

  async count(): Promise<number> {
    return (await this.conn.value<number>(Q.count))!;
  }

  byCallId(callId: string): Promise<Record<string, unknown> | undefined> {
    return this.conn.get(Q.byId, [callId]);
  }
}
