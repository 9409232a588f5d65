/**
 * Call outcomes shipped by gateways. Inserts are idempotent by `call_id` and batched: one
 * transaction per batch, so an acked batch is durable (synchronous=FULL) as a whole. The same
 * transaction adds each new call to the settler's queue (`unsettled_outcomes`, migration 19)
 * and the newly inserted rows to the per-minute rollups (`rollups.ts`).
 *
 * Rows go in `CHUNK_ROWS` at a time, one multi-row INSERT each (a third less CPU per row than
 * one statement per row: the binding and statement steps are paid once per chunk). A chunk in
 * which any row was already stored (a replayed batch, or a call id twice in one batch) is
 * rolled back to its savepoint and inserted row by row, so the rollups get exactly the rows
 * that were new. Only a stored call id is skipped: a row that breaks any other constraint fails
 * the whole batch (the wire schema keeps such rows out; a silently dropped outcome is a lost one).
 * A new row's queue entry goes in by the same kind of statement, in the same savepoint. Call ids
 * are stored in lowercase (`canonicalCallId`), so an id shipped in capitals is the same call.
 */
import type { Db } from './db';
import { CodedError } from '../../protocol/coded-error';
import { canonicalCallId, type OutcomeRecord } from '../../protocol/outcome';
import type { RollupInput, RollupsTable } from './rollups';

/** Rows per multi-row INSERT (10 parameters each; well under SQLite's 32,766). */
export const CHUNK_ROWS = 100;

const COLUMNS = [
  'call_id',
  'key_id',
  'endpoint_id',
  'method',
  'status',
  'outcome',
  'latency_ms',
  'started_at',
  'gateway_id',
  'received_at',
];
const INSERT = `INSERT INTO outcome_records (${COLUMNS.join(', ')}) VALUES `;
/** Only a stored call id is skipped; any other constraint a row breaks fails the batch. */
const ON_CONFLICT = ' ON CONFLICT (call_id) DO NOTHING';
const TUPLE = `(${COLUMNS.map(() => '?').join(', ')})`;
/** The settler's queue: a new call's entry (`putQueueRow` fills its parameters). */
const QUEUE_COLUMNS = ['endpoint_id', 'received_at', 'call_id', 'key_id', 'outcome', 'started_at'];
const queueInsert = (rows: number): string =>
  `INSERT INTO unsettled_outcomes (${QUEUE_COLUMNS.join(', ')}) VALUES ` +
  new Array<string>(rows).fill(`(${QUEUE_COLUMNS.map(() => '?').join(', ')})`).join(', ');

/** Put one row's parameters, in `COLUMNS` order, into `args` from index `at`. */
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
  args[at + 9] = receivedAt;
}

/** Put one row's queue parameters, in `QUEUE_COLUMNS` order, into `args` from index `at`. */
function putQueueRow(args: unknown[], at: number, r: OutcomeRecord, id: string, startedMs: number, receivedAt: number): void {
  args[at] = r.endpoint_id;
  args[at + 1] = receivedAt;
  args[at + 2] = id;
  args[at + 3] = r.key_id;
  args[at + 4] = r.outcome;
  args[at + 5] = startedMs;
}

/** A chunk held a row control already had; its savepoint is rolled back and its rows go one by one. */
class ChunkHadDuplicates extends CodedError {
  override readonly code = 'SVC_ERR_CHUNK_DUPLICATES';
  constructor() {
    super('a chunk of outcomes held a call already stored');
  }
}

export class OutcomesTable {
  private readonly insertStmt;
  private readonly chunkStmt;
  private readonly queueStmt;
  private readonly queueChunkStmt;
  private readonly countStmt;
  private readonly byIdStmt;
  private readonly insertBatch;
  private readonly insertChunk;
  /** The statements' parameters, reused from chunk to chunk and row to row. */
  private readonly chunkArgs = new Array<unknown>(CHUNK_ROWS * COLUMNS.length);
  private readonly rowArgs = new Array<unknown>(COLUMNS.length);
  private readonly queueChunkArgs = new Array<unknown>(CHUNK_ROWS * QUEUE_COLUMNS.length);
  private readonly queueRowArgs = new Array<unknown>(QUEUE_COLUMNS.length);

  constructor(db: Db, rollups: RollupsTable) {
    this.insertStmt = db.prepare(INSERT + TUPLE + ON_CONFLICT);
    this.chunkStmt = db.prepare(INSERT + new Array<string>(CHUNK_ROWS).fill(TUPLE).join(', ') + ON_CONFLICT);
    this.queueStmt = db.prepare(queueInsert(1));
    this.queueChunkStmt = db.prepare(queueInsert(CHUNK_ROWS));
    this.countStmt = db.prepare(`SELECT count(*) FROM outcome_records`).pluck();
    this.byIdStmt = db.prepare(`SELECT * FROM outcomes WHERE call_id = ?`);
    // Nested in `insertBatch`, so better-sqlite3 runs it in a savepoint: throwing undoes the chunk only.
    this.insertChunk = db.transaction((records: OutcomeRecord[], from: number, ids: string[], started: number[], at: number) => {
      for (let i = 0; i < CHUNK_ROWS; i++)
        putRow(this.chunkArgs, i * COLUMNS.length, records[from + i]!, ids[from + i]!, started[from + i]!, at);
      if (this.chunkStmt.run(...this.chunkArgs).changes !== CHUNK_ROWS) throw new ChunkHadDuplicates();
      for (let i = 0; i < CHUNK_ROWS; i++)
        putQueueRow(this.queueChunkArgs, i * QUEUE_COLUMNS.length, records[from + i]!, ids[from + i]!, started[from + i]!, at);
      this.queueChunkStmt.run(...this.queueChunkArgs);
    });
    this.insertBatch = db.transaction((records: OutcomeRecord[], at: number) => {
      // The wire's UUIDs, stored in lowercase (`canonicalCallId`).
      const ids = records.map((r) => r.call_id.toLowerCase());
      const started = records.map((r) => Date.parse(r.started_at));
      const inserted: RollupInput[] = [];
      const keep = (r: OutcomeRecord, i: number) =>
        inserted.push({ endpoint_id: r.endpoint_id, started_ms: started[i]!, outcome: r.outcome, latency_ms: r.latency_ms });
      let i = 0;
      for (; i + CHUNK_ROWS <= records.length; i += CHUNK_ROWS) {
        try {
          this.insertChunk(records, i, ids, started, at);
          for (let j = i; j < i + CHUNK_ROWS; j++) keep(records[j]!, j);
        } catch (err) {
          if (!(err instanceof ChunkHadDuplicates)) throw err;
          for (let j = i; j < i + CHUNK_ROWS; j++) if (this.insertOne(records[j]!, ids[j]!, started[j]!, at)) keep(records[j]!, j);
        }
      }
      for (; i < records.length; i++) if (this.insertOne(records[i]!, ids[i]!, started[i]!, at)) keep(records[i]!, i);
      // Only rows actually inserted reach the rollups: a replayed call never counts twice.
      rollups.add(inserted);
      return inserted.length;
    });
  }

  /** Store a batch in one transaction; returns how many were new. */
  ingest(records: OutcomeRecord[], at: number): number {
    return this.insertBatch.immediate(records, at);
  }

  count(): number {
    return this.countStmt.get() as number;
  }

  byCallId(callId: string): Record<string, unknown> | undefined {
    const id = canonicalCallId(callId);
    return id === null ? undefined : (this.byIdStmt.get(id) as Record<string, unknown> | undefined);
  }

  /** One row; true if it was new. */
  private insertOne(r: OutcomeRecord, id: string, startedMs: number, at: number): boolean {
    putRow(this.rowArgs, 0, r, id, startedMs, at);
    if (this.insertStmt.run(...this.rowArgs).changes !== 1) return false;
    putQueueRow(this.queueRowArgs, 0, r, id, startedMs, at);
    this.queueStmt.run(...this.queueRowArgs);
    return true;
  }
}
