/**
 * Call outcomes (`../outcomes.ts`), on either database. Ingest is the hot path, and each
 * database gets the statements it runs fastest:
 *
 * - SQLite: rows go in `CHUNK_ROWS` at a time, one multi-row INSERT each (a third less CPU per
 *   row than one statement per row: the binding and statement steps are paid once per chunk),
 *   with the chunk's queue entries by one statement too. A chunk in which some row was already
 *   stored (a replayed batch, or a call id twice in one batch) is rolled back to its savepoint
 *   and its rows go one by one, as do the batch's last rows. (An INSERT answering the call ids
 *   it stored, with `RETURNING`, would need no savepoint, but cost ingest 5 % more CPU.) The
 *   rollups get one upsert per endpoint-minute, grouped here (`rollupGroups`).
 * - PostgreSQL: a batch is ONE statement whatever its size, so it commits on its own: an
 *   INSERT of every row (the columns go as arrays that `unnest` zips into rows) that skips the
 *   call ids already stored and, in the same statement, the queue entries of the rows it did
 *   insert and their rollups, grouped by endpoint and minute in SQL (`rollupsOfInserted`, from
 *   the same bucket bounds and outcome lists as `rollupGroups`), so no row travels back. Rows
 *   go in in (call id, position) order: two batches holding the same calls (a shipper's retry
 *   while its first try still runs) wait for each other rather than deadlock, and the rollups
 *   lock theirs in (minute, endpoint) order too. Ingest does not take the writer lock.
 */
import { InvariantError } from '../../../protocol/coded-error';
import { canonicalCallId, UNRATED_OUTCOMES, type OutcomeRecord } from '../../../protocol/outcome';
import { sql, type Conn } from '../conn';
import { CHUNK_ROWS, type OutcomesTable } from '../outcomes';
import { COUNT_COLUMNS, LATENCY_BOUNDS_MS, MINUTE_MS, OUTCOME_COLUMNS, rollupGroups, type RollupInput } from '../rollups';

/** An `outcome_records` row's columns, in the order ingest binds them. */
export const RECORD_COLUMNS = [
  'call_id',
  'key_id',
  'endpoint_id',
  'method',
  'status',
  'outcome',
  'latency_ms',
  'started_at',
  'gateway_id',
  'reserved',
  'instance',
  'uncovered',
  'received_at',
];
/** The settler's queue: a new call's entry. */
const QUEUE_COLUMNS = ['endpoint_id', 'received_at', 'call_id', 'key_id', 'outcome', 'started_at', 'reserved', 'uncovered'];
const tuples = (columns: readonly string[], rows: number) =>
  new Array<string>(rows).fill(`(${columns.map(() => '?').join(', ')})`).join(', ');
/** Only a stored call id is skipped; any other constraint a row breaks fails the batch. */
const insert = (rows: number) =>
  `INSERT INTO outcome_records (${RECORD_COLUMNS.join(', ')}) VALUES ${tuples(RECORD_COLUMNS, rows)} ON CONFLICT (call_id) DO NOTHING`;
const queue = (rows: number) => `INSERT INTO unsettled_outcomes (${QUEUE_COLUMNS.join(', ')}) VALUES ${tuples(QUEUE_COLUMNS, rows)}`;

/**
 * Add the rows of `groups` (endpoint_id, minute and the `COUNT_COLUMNS`) to the rollups;
 * on PostgreSQL, `ORDER BY` fixes the order rows are locked in.
 */
const rollupUpsert = (groups: string) =>
  `INSERT INTO outcome_rollups (endpoint_id, minute, ${COUNT_COLUMNS.join(', ')}) ${groups}
   ON CONFLICT (minute, endpoint_id) DO UPDATE SET ${COUNT_COLUMNS.map((c) => `${c} = outcome_rollups.${c} + excluded.${c}`).join(', ')}`;

const quoted = (values: Iterable<string>) => [...values].map((v) => `'${v}'`).join(', ');

/**
 * `rollupGroups` in SQL, over the rows the insert of the same statement returned (`inserted`):
 * one row per endpoint and minute, its outcome counts, then its latency histogram (rated
 * outcomes only; bucket i holds latencies above bound i-1 up to bound i).
 */
function rollupsOfInserted(): string {
  const bucket = `CASE WHEN outcome IN (${quoted(UNRATED_OUTCOMES)}) THEN NULL
    ${LATENCY_BOUNDS_MS.map((bound, i) => `WHEN latency_ms <= ${bound} THEN ${i}`).join(' ')}
    ELSE ${LATENCY_BOUNDS_MS.length} END`;
  const counts = [
    ...OUTCOME_COLUMNS.map((outcome) => `count(*) FILTER (WHERE outcome = '${outcome}')`),
    ...[...LATENCY_BOUNDS_MS.keys(), LATENCY_BOUNDS_MS.length].map((i) => `count(*) FILTER (WHERE bucket = ${i})`),
  ];
  if (counts.length !== COUNT_COLUMNS.length) throw new InvariantError('rollups: one count per column');
  return `SELECT endpoint_id, minute, ${counts.map((c, i) => `${c} AS ${COUNT_COLUMNS[i]}`).join(', ')}
    FROM (SELECT endpoint_id, floor(started_at / ${MINUTE_MS}.0)::bigint AS minute, outcome, ${bucket} AS bucket FROM inserted) AS r
    GROUP BY endpoint_id, minute ORDER BY minute, endpoint_id COLLATE "C"`;
}

/**
 * The reserved calls of a batch, added to the escrow of the instance whose budget they spent
 * (`account_escrows.spent`), per account: in the same statement as their insert on PostgreSQL
 * (`inserted`), and from the parameters of the new rows on SQLite (`Q.spentSqlite`).
 */
const spentOfInserted = `UPDATE account_escrows e SET spent = e.spent + s.reserved
  FROM (SELECT i.gateway_id, i.instance, k.account_id, sum(i.reserved) AS reserved
        FROM inserted i JOIN keys k ON k.id = i.key_id
        WHERE i.reserved IS NOT NULL AND i.instance IS NOT NULL GROUP BY 1, 2, 3) s
  WHERE e.account_id = s.account_id AND e.gateway_id = s.gateway_id AND e.instance = s.instance`;

const Q = {
  spentSqlite: sql(
    `UPDATE account_escrows SET spent = spent + ?
     WHERE gateway_id = ? AND instance = ? AND account_id = (SELECT account_id FROM keys WHERE id = ?)`,
  ),
  chunk: sql(insert(CHUNK_ROWS)),
  row: sql(insert(1)),
  // SQLite only: a chunk that held a stored call is undone, and its rows go one by one.
  savepoint: sql(`SAVEPOINT chunk`),
  release: sql(`RELEASE chunk`),
  undo: sql(`ROLLBACK TO chunk`),
  queueChunk: sql(queue(CHUNK_ROWS)),
  queueRow: sql(queue(1)),
  rollup: sql(rollupUpsert(`VALUES (?, ?, ${COUNT_COLUMNS.map(() => '?').join(', ')})`)),
  pgIngest: sql(
    `WITH inserted AS (
     INSERT INTO outcome_records (${RECORD_COLUMNS.join(', ')})
     SELECT call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, reserved, instance, uncovered,
            @received_at::bigint
     FROM unnest(@call_id::uuid[], @key_id::text[], @endpoint_id::text[], @method::text[], @status::bigint[],
                 @outcome::text[], @latency_ms::bigint[], @started_at::bigint[], @gateway_id::text[],
                 @reserved::bigint[], @instance::text[], @uncovered::bigint[]) WITH ORDINALITY
       AS r (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at, gateway_id, reserved, instance, uncovered, n)
     ORDER BY call_id, n
     ON CONFLICT (call_id) DO NOTHING
     RETURNING ${QUEUE_COLUMNS.join(', ')}, latency_ms, gateway_id, instance),
     queued AS (INSERT INTO unsettled_outcomes (${QUEUE_COLUMNS.join(', ')}) SELECT ${QUEUE_COLUMNS.join(', ')} FROM inserted),
     rolled AS (${rollupUpsert(rollupsOfInserted())}),
     spent AS (${spentOfInserted})
     SELECT count(*) FROM inserted`,
    { pgOnly: true },
  ),
  count: sql(`SELECT count(*) FROM outcome_records`),
  byId: sql(`SELECT * FROM outcomes WHERE call_id = ?`),
};

/** Put one row's parameters, in `RECORD_COLUMNS` order, into `args` from index `at`. */
function putRow(args: unknown[], at: number, r: OutcomeRecord, id: string, startedMs: number, receivedAt: number): void {
  args[at] = id;
  args[at + 1] = r.key_id;
  args[at + 2] = r.endpoint_id;
  args[at + 3] = r.method;
  args[at + 4] = r.status;
  args[at + 5] = r.outcome;
  args[at + 6] = r.latency_ms;
  args[at + 7] = startedMs;
  args[at + 8] = r.gateway_id;
  args[at + 9] = r.reserved ?? null;
  args[at + 10] = r.instance ?? null;
  args[at + 11] = r.coverage === 'none' ? 1 : 0;
  args[at + 12] = receivedAt;
}

/** Where each queue column's value sits in a row's parameters. */
const QUEUE_FROM_ROW = QUEUE_COLUMNS.map((c) => RECORD_COLUMNS.indexOf(c));

/** The queue parameters of `rows` rows, from row `from` of `args` (rows' parameters, as `putRow` put them). */
function queueArgs(args: readonly unknown[], from: number, rows: number): unknown[] {
  const out = new Array<unknown>(rows * QUEUE_FROM_ROW.length);
  for (let j = 0; j < rows; j++)
    for (let k = 0; k < QUEUE_FROM_ROW.length; k++)
      out[j * QUEUE_FROM_ROW.length + k] = args[(from + j) * RECORD_COLUMNS.length + QUEUE_FROM_ROW[k]!];
  return out;
}

/** PostgreSQL's batch parameters: one array per column but `received_at`, the batch's. */
function columnsOf(records: readonly OutcomeRecord[], receivedAt: number): Record<string, unknown> {
  const names = RECORD_COLUMNS.slice(0, -1);
  const columns = names.map(() => new Array<unknown>(records.length));
  const row = new Array<unknown>(RECORD_COLUMNS.length);
  for (let i = 0; i < records.length; i++) {
    // The `uuid` cast stores the call id in lowercase (`canonicalCallId`).
    putRow(row, 0, records[i]!, records[i]!.call_id, Date.parse(records[i]!.started_at), receivedAt);
    for (let c = 0; c < names.length; c++) columns[c]![i] = row[c];
  }
  const params: Record<string, unknown> = { received_at: receivedAt };
  names.forEach((name, c) => (params[name] = columns[c]));
  return params;
}

export class SqlOutcomesTable implements OutcomesTable {
  constructor(private readonly conn: Conn) {}

  async ingest(records: OutcomeRecord[], at: number): Promise<number> {
    if (records.length === 0) return 0;
    if (this.conn.dialect === 'pg') return (await this.conn.value<number>(Q.pgIngest, columnsOf(records, at)))!;
    return this.conn.tx(async (conn) => {
      // The wire's UUIDs, stored in lowercase (`canonicalCallId`).
      const ids = records.map((r) => r.call_id.toLowerCase());
      const started = records.map((r) => Date.parse(r.started_at));
      const inserted: RollupInput[] = [];
      /** Reserved premiums of the new rows, per gateway, instance and key (`Q.spentSqlite`). */
      const spent = new Map<string, { gateway: string; instance: string; key: string; amount: number }>();
      const args = new Array<unknown>(CHUNK_ROWS * RECORD_COLUMNS.length);
      const keep = (i: number) => {
        const r = records[i]!;
        inserted.push({ endpoint_id: r.endpoint_id, started_ms: started[i]!, outcome: r.outcome, latency_ms: r.latency_ms });
        if (r.reserved !== undefined && r.instance !== undefined && r.key_id !== null) {
          const id = `${r.gateway_id}\n${r.instance}\n${r.key_id}`;
          const known = spent.get(id);
          if (known) known.amount += r.reserved;
          else spent.set(id, { gateway: r.gateway_id, instance: r.instance, key: r.key_id, amount: r.reserved });
        }
      };
      /** Rows [from, to) one by one, each queued if it was new. */
      const oneByOne = async (from: number, to: number) => {
        for (let i = from; i < to; i++) {
          putRow(args, 0, records[i]!, ids[i]!, started[i]!, at);
          if ((await conn.run(Q.row, args.slice(0, RECORD_COLUMNS.length))) === 0) continue;
          await conn.run(Q.queueRow, queueArgs(args, 0, 1));
          keep(i);
        }
      };
      let i = 0;
      for (; i + CHUNK_ROWS <= records.length; i += CHUNK_ROWS) {
        for (let j = 0; j < CHUNK_ROWS; j++) putRow(args, j * RECORD_COLUMNS.length, records[i + j]!, ids[i + j]!, started[i + j]!, at);
        await conn.run(Q.savepoint);
        if ((await conn.run(Q.chunk, args)) === CHUNK_ROWS) {
          await conn.run(Q.queueChunk, queueArgs(args, 0, CHUNK_ROWS));
          await conn.run(Q.release);
          for (let j = i; j < i + CHUNK_ROWS; j++) keep(j);
          continue;
        }
        await conn.run(Q.undo);
        await conn.run(Q.release);
        await oneByOne(i, i + CHUNK_ROWS);
      }
      await oneByOne(i, records.length);
      for (const g of rollupGroups(inserted)) await conn.run(Q.rollup, [g.endpoint_id, g.minute, ...g.counts]);
      for (const e of spent.values()) await conn.run(Q.spentSqlite, [e.amount, e.gateway, e.instance, e.key]);
      return inserted.length;
    });
  }

  async count(): Promise<number> {
    return (await this.conn.value<number>(Q.count))!;
  }

  async byCallId(callId: string): Promise<Record<string, unknown> | undefined> {
    const id = canonicalCallId(callId);
    return id === null ? undefined : this.conn.get(Q.byId, [id]);
  }
}
