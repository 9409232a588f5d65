/**
 * This control process's count of committed outcome ingests (docs/money.md, "Pause"). The
 * outcome route (sync/routes.ts) numbers each batch once it is committed and tells the gateway in its
 * answer (`OutcomeAck.ingest_seq`, with `ingest_instance`); the coverage loop (coverage.ts)
 * takes the count before it reads the pool, and the hub sends it as an `ingested` line right
 * before each `coverage` line from that evaluation (sync/side-lines.ts). An evaluation that took
 * count n read every batch numbered up to n: their commits ended before the count reached n.
 *
 * Kept in memory only, so it starts again at 0 with each process, whose `instance` is new: a
 * gateway compares numbers of one instance only. Several controls on one database count apart.
 */
import { randomUUID } from 'node:crypto';
import type { IngestedLine } from '../protocol/snapshot';

/** What an evaluation of coverage had seen when it started: the instance and its count then. */
export type IngestMark = Omit<IngestedLine, 'type'>;

export class IngestCounter {
  /** This process: drawn at its start (protocol/budgets.ts `InstanceId`). */
  readonly instance: string = randomUUID();
  private count = 0;

  /** An outcome batch was committed: its number (1, 2, …). Call it after the commit, never before. */
  committed(): number {
    return ++this.count;
  }

  /** The count now, for an evaluation about to read: every batch it numbers is committed. */
  mark(): IngestMark {
    return { instance: this.instance, seq: this.count };
  }
}
