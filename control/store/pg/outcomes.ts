/**
 * Call outcomes shipped by gateways, on PostgreSQL (`../outcomes.ts` is the SQLite twin).
 * Inserts are idempotent by `call_id` and batched: one transaction per batch, so an acked batch
 * is durable as a whole, and the same transaction adds the newly inserted rows to the
 * per-minute rollups (`rollups.ts`).
 *
 * A batch is ONE statement whatever its size, so it commits on its own: an INSERT of every row
 * (the columns go as arrays that `unnest` zips into rows) that skips the call ids already
 * stored, and, in the same statement, the settler's queue entries of the rows it did insert
 * (`unsettled_outcomes`, migration 9) and the rollup upsert of those rows, grouped by
 * endpoint and minute in SQL (`rollupsOfInserted`, written from the same bucket bounds and
 * outcome lists as `rollupGroups`), so no row travels back to control. A call id twice in one
 * batch is stored once, as first received (rows go in in (call id, position) order). Only a
 * stored call id is skipped: a row that breaks any other constraint fails the whole batch (the
 * wire schema keeps such rows out; a silently dropped outcome is a lost one).
 *
 * Ingest does not take the writer lock: batches run side by side, and rows are inserted in
 * call id order so two batches holding the same calls (a shipper's retry while its first try
 * still runs) wait for each other rather than deadlock; the rollups lock theirs in order too.
 */
import { InvariantError } from '../../../protocol/coded-error';
import { canonicalCallId, UNRATED_OUTCOMES, type OutcomeRecord } from '../../../protocol/outcome';
import type { OutcomesTable } from '../outcomes';
import { COUNT_COLUMNS, LATENCY_BOUNDS_MS, MINUTE_MS, OUTCOME_COLUMNS } from '../rollups';
import type { Async } from '../seam';
import { sql, type PgConn } from './conn';
import { ROLLUP_UPSERT } from './rollups';

const quoted = (values: Iterable<string>) => [...values].map((v) => `'${v}'`).join(', ');

/**
 * `rollupGroups` (`../rollups.ts`) in SQL, over the rows the insert of the same statement
 * returned (`inserted`): one row per endpoint and minute, its outcome counts, then its latency
 * histogram (rated outcomes only; bucket i holds latencies above bound i-1 up to bound i).
 */
function rollupsOfInserted(): string {
  const bucket = `CASE WHEN outcome IN (${quoted(UNRATED_OUTCOMES)}) THEN NULL
    ${LATENCY_BOUNDS_MS.map((bound, i) => `WHEN latency_ms <= ${bound} THEN ${i}`).join(' ')}
    ELSE ${LATENCY_BOUNDS_MS.length} END`;
  const counts = [
    ...OUTCOME_COLUMNS.map((outcome) => `count(*) FILTER (WHERE outcome = '${outcome}')`),
    ...LATENCY_BOUNDS_MS.map((_, i) => i)
      .concat(LATENCY_BOUNDS_MS.length)
      .map((i) => `count(*) FILTER (WHERE bucket = ${i})`),
  ];
  if (counts.length !== COUNT_COLUMNS.length) throw new InvariantError('rollups: one count per column');
  return `SELECT endpoint_id, minute, ${counts.map((c, i) => `${c} AS ${COUNT_COLUMNS[i]}`).join(', ')}
    FROM (SELECT endpoint_id, floor(started_at / ${MINUTE_MS}.0)::bigint AS minute, outcome, ${bucket} AS bucket FROM inserted) AS r
    GROUP BY endpoint_id, minute`;
}

const Q = {
  ingest: sql(
    `WITH inserted AS (
     INSERT INTO outcome_records (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, received_at)
     SELECT call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, @received_at::bigint
     FROM unnest(@call_id::uuid[], @key_id::text[], @endpoint_id::text[], @method::text[], @status::bigint[],
                 @outcome::text[], @latency_ms::bigint[], @started_at::bigint[], @gateway_id::text[]) WITH ORDINALITY
       AS r (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, n)
     ORDER BY call_id, n
     ON CONFLICT (call_id) DO NOTHING
     RETURNING call_id, key_id, endpoint_id, started_at, received_at, outcome, latency_ms),
     queued AS (INSERT INTO unsettled_outcomes (endpoint_id, received_at, call_id, key_id, outcome, started_at)
                SELECT endpoint_id, received_at, call_id, key_id, outcome, started_at FROM inserted),
     rolled AS (${ROLLUP_UPSERT(rollupsOfInserted())})
     SELECT count(*) FROM inserted`,
  ),
  count: sql(`SELECT count(*) FROM outcome_records`),
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
    callId[i] = r.call_id; // the `uuid` cast stores it in lowercase (`canonicalCallId`)
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
  constructor(private readonly conn: PgConn) {}

  /**
   * Store a batch and add it to the rollups in one statement (atomic on its own); returns how
   * many were new. Only rows actually inserted reach the rollups: a replayed call never counts twice.
   */
  async ingest(records: OutcomeRecord[], at: number): Promise<number> {
    if (records.length === 0) return 0;
    return (await this.conn.value<number>(Q.ingest, columnsOf(records, at)))!;
  }

  async count(): Promise<number> {
    return (await this.conn.value<number>(Q.count))!;
  }

  async byCallId(callId: string): Promise<Record<string, unknown> | undefined> {
    const id = canonicalCallId(callId);
    return id === null ? undefined : this.conn.get(Q.byId, [id]);
  }
}
