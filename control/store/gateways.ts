/**
 * Every gateway that has dialled in: its applied state version, its last nack, its weight in
 * the limit split, the share control last pushed to it, and the control it is attached to.
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
  /** The control serving its sync stream now; null while it is detached. */
  control_id: string | null;
  /** The proxy engine it announced at its last connect; null when it announced none. */
  engine: string | null;
}

/**
 * One row of `ackedMany`: a gateway acked `version` (with its digest) at `at`, or, without a
 * `version`, was only seen alive at `at` (a lease renewal, an outcome batch, a connect).
 */
export interface GatewayAckRow {
  id: string;
  at: number;
  version?: number;
  sha256?: string | null;
}

/** One gateway's row of an `ackedMany` batch, folded (`foldAckRows`); `version` null: only seen. */
export interface FoldedAckRow {
  id: string;
  /** Its first row's `at` (`first_seen` if it is new) and its last's (`last_seen`). */
  first: number;
  at: number;
  version: number | null;
  sha256: string | null;
}

/**
 * `rows` folded to one row per gateway, as if written one after another: the last ack of each
 * (its version and digest), first seen at its first row's `at` and last at its last row's; in the order each gateway first
 * appears. (One PostgreSQL statement may not change a row twice.)
 */
export function foldAckRows(rows: readonly GatewayAckRow[]): FoldedAckRow[] {
  const byId = new Map<string, FoldedAckRow>();
  for (const row of rows) {
    let folded = byId.get(row.id);
    if (folded === undefined) byId.set(row.id, (folded = { id: row.id, first: row.at, at: row.at, version: null, sha256: null }));
    folded.at = row.at;
    if (row.version !== undefined) {
      folded.version = row.version;
      folded.sha256 = row.sha256 ?? null;
    }
  }
  return [...byId.values()];
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
  private readonly ackManyStmt;
  private readonly ackedManyTx;
  private readonly attachStmt;
  private readonly detachStmt;

  constructor(db: Db) {
    this.seenStmt = db.prepare(
      `INSERT INTO gateways (id, first_seen, last_seen) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen`,
    );
    // Every connected gateway acks every change: the sync hub writes the acks of one event-loop
    // turn together (`ackedMany`, one commit and one WAL sync), not one commit per ack.
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
    // One row of `ackedMany`: an ack (`acked` 1) sets the applied version and digest, a
    // sighting (`acked` 0) only `last_seen`; a gateway not known yet is inserted either way.
    this.ackManyStmt = db.prepare(
      `INSERT INTO gateways (id, first_seen, last_seen, applied_version, applied_sha256) VALUES (@id, @first, @at, coalesce(@version, 0), @sha256)
       ON CONFLICT (id) DO UPDATE SET
         applied_version = CASE WHEN @acked THEN excluded.applied_version ELSE applied_version END,
         applied_sha256 = CASE WHEN @acked THEN excluded.applied_sha256 ELSE applied_sha256 END,
         last_seen = excluded.last_seen`,
    );
    this.ackedManyTx = db.transaction((rows: readonly FoldedAckRow[]) => {
      for (const row of rows) this.ackManyStmt.run({ ...row, acked: row.version === null ? 0 : 1 });
    });
    this.attachStmt = db.prepare(
      `INSERT INTO gateways (id, first_seen, last_seen, control_id, engine) VALUES (@id, @at, @at, @control_id, @engine)
       ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen, control_id = excluded.control_id, engine = excluded.engine
       RETURNING *`,
    );
    this.detachStmt = db.prepare(`UPDATE gateways SET control_id = NULL WHERE id = ? AND control_id = ?`);
  }

  /**
   * Gateway `id` connected to control `controlId` at `at`, announcing `engine`: it is seen and
   * attached there (known from now on if it was not). Answers its row as it is now.
   */
  attach(id: string, controlId: string, engine: string | null, at: number): GatewayRow {
    return this.attachStmt.get({ id, control_id: controlId, engine, at }) as GatewayRow;
  }

  /** Gateway `id`'s stream to control `controlId` closed: detached, unless it is attached to another control by now. */
  detach(id: string, controlId: string): void {
    this.detachStmt.run(id, controlId);
  }

  seen(id: string, at: number): void {
    this.seenStmt.run(id, at, at);
  }

  acked(id: string, version: number, sha256: string | null, at: number): void {
    this.ackStmt.run({ id, version, sha256, at });
  }

  /**
   * Acks and sightings of many gateways (`GatewayAckRow`) in one transaction: all stored or, on
   * a failure, none. Rows of one gateway apply in order, as `acked` and `seen` one by one would.
   * `from`: the control writing them, which a shared database tells the other controls of
   * (`ClusterTable.onGateways`) when the batch holds an ack; a SQLite store has none to tell.
   */
  ackedMany(rows: readonly GatewayAckRow[], _from: string | null = null): void {
    if (rows.length > 0) this.ackedManyTx(foldAckRows(rows));
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
