/**
 * Call outcomes shipped by gateways. Inserts are idempotent by `call_id` and batched: one
 * transaction per batch, so an acked batch is durable (synchronous=FULL) as a whole. The same
 * transaction adds the newly inserted rows to the per-minute rollups (`rollups.ts`).
 */
import type { Db } from './db';
import type { OutcomeRecord } from '../../protocol/outcome';
import type { RollupInput, RollupsTable } from './rollups';

export class OutcomesTable {
  private readonly insertStmt;
  private readonly countStmt;
  private readonly byIdStmt;
  private readonly insertBatch;

  constructor(db: Db, rollups: RollupsTable) {
    this.insertStmt = db.prepare(
      `INSERT OR IGNORE INTO outcomes (call_id, key_id, endpoint_id, method, status, outcome, latency_ms, started_at,
                                       gateway_id, received_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.countStmt = db.prepare(`SELECT count(*) FROM outcomes`).pluck();
    this.byIdStmt = db.prepare(`SELECT * FROM outcomes WHERE call_id = ?`);
    this.insertBatch = db.transaction((records: OutcomeRecord[], at: number) => {
      const inserted: RollupInput[] = [];
      for (const r of records) {
        const startedMs = Date.parse(r.started_at);
        const { changes } = this.insertStmt.run(
          r.call_id,
          r.key_id,
          r.endpoint_id,
          r.method,
          r.status,
          r.outcome,
          r.latency_ms,
          startedMs,
          r.gateway_id,
          at,
        );
        // Only rows actually inserted reach the rollups: a replayed call never counts twice.
        if (changes === 1)
          inserted.push({ endpoint_id: r.endpoint_id, started_ms: startedMs, outcome: r.outcome, latency_ms: r.latency_ms });
      }
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
    return this.byIdStmt.get(callId) as Record<string, unknown> | undefined;
  }
}
