/**
 * The gateways' acks and sightings (lease renewals, connects, outcome batches), written
 * together: every connected gateway acks every change at about the same time, so the rows
 * that arrive in one event-loop turn go to the store in one call (`gateways.ackedMany`, one
 * transaction and one commit) instead of one commit each. Each caller is answered once its
 * row is stored; a failed write fails every caller of that batch with its error.
 *
 * One batch is written at a time: rows that arrive meanwhile wait for it and go in the next,
 * so a gateway's rows reach the database in the order they came.
 */
import type { GatewayAckRow } from '../store/gateways';

interface Pending {
  row: GatewayAckRow;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class AckBatcher {
  private pending: Pending[] = [];
  private scheduled = false;
  private writing = false;

  /** `write`: stores a batch in one transaction (`store.gateways.ackedMany`). */
  constructor(private readonly write: (rows: readonly GatewayAckRow[]) => Promise<void>) {}

  /** Store `row` with the others of this event-loop turn; settles once it is stored. */
  add(row: GatewayAckRow): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ row, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.writing) return;
    this.scheduled = true;
    // After the I/O of this turn: every ack read in it is in the batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    this.writing = true;
    try {
      await this.write(batch.map((p) => p.row));
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.writing = false;
      if (this.pending.length > 0) this.schedule();
    }
  }
}
