/** Every gateway that has dialled in: its applied state version and its last nack. */
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
}

export class GatewaysTable {
  private readonly seenStmt;
  private readonly ackStmt;
  private readonly nackStmt;
  private readonly byIdStmt;
  private readonly listStmt;

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

  byId(id: string): GatewayRow | undefined {
    return this.byIdStmt.get(id) as GatewayRow | undefined;
  }

  list(): GatewayRow[] {
    return this.listStmt.all() as GatewayRow[];
  }
}
