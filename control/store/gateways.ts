/**
 * Every gateway that has dialled in: its applied state version, its last nack, its weight in
 * the limit split and the share control last pushed to it.
 */
import type { Db } from './db';

export interface GatewayRow {
  id: string;
  applied_version: number;
  applied_sha256: string | null;
  first_seen: number;
  last_seen: number;
  last_nack_version: number | null;
  last_nack_reason: string | null;
  last_nack_at: number | null;
  weight: number;
  share: number | null;
}

export class GatewaysTable {
  private readonly seenStmt;
  private readonly ackStmt;
  private readonly nackStmt;
  private readonly byIdStmt;
  private readonly listStmt;
  private readonly weightStmt;
  private readonly shareStmt;
  private readonly recordSharesTx;

  constructor(db: Db) {
    this.seenStmt = db.prepare(
      `INSERT INTO gateways (id, first_seen, last_seen) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen`,
    );
    // One statement (one commit, one WAL sync) per ack or nack: every connected gateway acks
    // every change, so with N gateways a change costs N of these (bench:fanout).
    this.ackStmt = db.prepare(
      `INSERT INTO gateways (id, first_seen, last_seen, applied_version, applied_sha256) VALUES (@id, @at, @at, @version, @sha256)
       ON CONFLICT (id) DO UPDATE SET applied_version = excluded.applied_version, applied_sha256 = excluded.applied_sha256, last_seen = excluded.last_seen`,
    );
    this.nackStmt = db.prepare(
      `INSERT INTO gateways (id, first_seen, last_seen, last_nack_version, last_nack_reason, last_nack_at) VALUES (@id, @at, @at, @version, @reason, @at)
       ON CONFLICT (id) DO UPDATE SET last_nack_version = excluded.last_nack_version, last_nack_reason = excluded.last_nack_reason,
         last_nack_at = excluded.last_nack_at, last_seen = excluded.last_seen`,
    );
    this.byIdStmt = db.prepare(`SELECT * FROM gateways WHERE id = ?`);
    this.listStmt = db.prepare(`SELECT * FROM gateways ORDER BY id`);
    this.weightStmt = db.prepare(`UPDATE gateways SET weight = ? WHERE id = ?`);
    this.shareStmt = db.prepare(`UPDATE gateways SET share = ? WHERE id = ?`);
    this.recordSharesTx = db.transaction((shares: ReadonlyMap<string, number>) => {
      for (const [id, share] of shares) this.shareStmt.run(share, id);
    });
  }

  seen(id: string, at: number): void {
    this.seenStmt.run(id, at, at);
  }

  acked(id: string, version: number, sha256: string | null, at: number): void {
    this.ackStmt.run({ id, version, sha256, at });
  }

  nacked(id: string, version: number, reason: string, at: number): void {
    this.nackStmt.run({ id, version, reason, at });
  }

  /** Set a known gateway's weight; false when there is no such gateway. */
  setWeight(id: string, weight: number): boolean {
    return this.weightStmt.run(weight, id).changes === 1;
  }

  /** Record the share last pushed to each gateway, in one transaction. */
  recordShares(shares: ReadonlyMap<string, number>): void {
    this.recordSharesTx(shares);
  }

  byId(id: string): GatewayRow | undefined {
    return this.byIdStmt.get(id) as GatewayRow | undefined;
  }

  list(): GatewayRow[] {
    return this.listStmt.all() as GatewayRow[];
  }
}
