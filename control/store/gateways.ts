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
    this.ackStmt = db.prepare(
      `UPDATE gateways SET applied_version = ?, applied_sha256 = ?, last_seen = ? WHERE id = ?`,
    );
    this.nackStmt = db.prepare(
      `UPDATE gateways SET last_nack_version = ?, last_nack_reason = ?, last_nack_at = ?, last_seen = ? WHERE id = ?`,
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
    this.seen(id, at);
    this.ackStmt.run(version, sha256, at, id);
  }

  nacked(id: string, version: number, reason: string, at: number): void {
    this.seen(id, at);
    this.nackStmt.run(version, reason, at, at, id);
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
