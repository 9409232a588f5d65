/** The gateways that dialled in, on PostgreSQL: `../gateways.ts`'s statements, asynchronous. */
import { foldAckRows, type GatewayAckRow, type GatewayRow, type GatewaysTable } from '../gateways';
import type { Async } from '../seam';
import { sql, type PgConn } from './conn';
import { GATEWAYS_CHANNEL } from './version-listener';

const Q = {
  seen: sql(
    `INSERT INTO gateways (id, first_seen, last_seen) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen`,
  ),
  ack: sql(
    `INSERT INTO gateways (id, first_seen, last_seen, applied_version, applied_sha256) VALUES (@id, @at, @at, @version, @sha256)
     ON CONFLICT (id) DO UPDATE SET applied_version = excluded.applied_version, applied_sha256 = excluded.applied_sha256, last_seen = excluded.last_seen`,
  ),
  // `ackedMany`: one row per gateway (folded first: one statement may not change a row twice),
  // each an ack (its id in `acked`: the applied version and digest) or a sighting (`last_seen`
  // only); one statement, so one commit. Rows are locked in id order, so concurrent batches
  // cannot deadlock.
  // An ack batch is told to every control (`GATEWAYS_CHANNEL`), for the `--wait`s of the
  // cluster; a batch of sightings alone is not (the others re-read the table every lease check).
  ackMany: sql(
    `WITH up AS (
     INSERT INTO gateways (id, first_seen, last_seen, applied_version, applied_sha256)
     SELECT id, first, at, coalesce(version, 0), sha256
     FROM unnest(@id::text[], @first::bigint[], @at::bigint[], @version::bigint[], @sha256::text[]) AS r (id, first, at, version, sha256)
     ORDER BY id COLLATE "C"
     ON CONFLICT (id) DO UPDATE SET
       applied_version = CASE WHEN excluded.id = ANY (@acked::text[]) THEN excluded.applied_version ELSE gateways.applied_version END,
       applied_sha256 = CASE WHEN excluded.id = ANY (@acked::text[]) THEN excluded.applied_sha256 ELSE gateways.applied_sha256 END,
       last_seen = excluded.last_seen
     RETURNING 1)
     SELECT pg_notify('${GATEWAYS_CHANNEL}', 'ack:' || @from::text) WHERE cardinality(@acked::text[]) > 0 AND @from::text IS NOT NULL`,
  ),
  nack: sql(
    `INSERT INTO gateways (id, first_seen, last_seen, last_nack_version, last_nack_reason, last_nack_at) VALUES (@id, @at, @at, @version, @reason, @at)
     ON CONFLICT (id) DO UPDATE SET last_nack_version = excluded.last_nack_version, last_nack_reason = excluded.last_nack_reason,
       last_nack_at = excluded.last_nack_at, last_seen = excluded.last_seen`,
  ),
  // Attaching and detaching are told to every control (`GATEWAYS_CHANNEL`), so each counts the
  // gateways the others serve.
  attach: sql(
    `WITH a AS (
       INSERT INTO gateways (id, first_seen, last_seen, control_id, engine) VALUES (@id, @at, @at, @control_id, @engine)
       ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen, control_id = excluded.control_id, engine = excluded.engine
       RETURNING *)
     SELECT a.* FROM a CROSS JOIN LATERAL (SELECT pg_notify('${GATEWAYS_CHANNEL}', 'member:' || @control_id::text)) n`,
  ),
  detach: sql(
    `WITH d AS (UPDATE gateways SET control_id = NULL WHERE id = @id AND control_id = @control_id RETURNING 1)
     SELECT pg_notify('${GATEWAYS_CHANNEL}', 'member:' || @control_id) FROM d`,
  ),
  byId: sql(`SELECT * FROM gateways WHERE id = ?`),
  list: sql(`SELECT * FROM gateways ORDER BY id`),
  weight: sql(`UPDATE gateways SET weight = ? WHERE id = ?`),
  // Every share of one division in one statement (16 gateways joining re-divide 16 times).
  shares: sql(`UPDATE gateways g SET share = x.share FROM unnest(?::text[], ?::float8[]) AS x (id, share) WHERE g.id = x.id`),
};

export class PgGatewaysTable implements Async<GatewaysTable> {
  constructor(private readonly conn: PgConn) {}

  async seen(id: string, at: number): Promise<void> {
    await this.conn.run(Q.seen, [id, at, at]);
  }

  async acked(id: string, version: number, sha256: string | null, at: number): Promise<void> {
    await this.conn.run(Q.ack, { id, version, sha256, at });
  }

  /** Acks and sightings of many gateways in one statement: all stored or none (`GatewaysTable.ackedMany`). */
  async ackedMany(rows: readonly GatewayAckRow[], from: string | null = null): Promise<void> {
    if (rows.length === 0) return;
    const folded = foldAckRows(rows);
    await this.conn.run(Q.ackMany, {
      id: folded.map((r) => r.id),
      first: folded.map((r) => r.first),
      at: folded.map((r) => r.at),
      version: folded.map((r) => r.version),
      sha256: folded.map((r) => r.sha256),
      acked: folded.filter((r) => r.version !== null).map((r) => r.id),
      from,
    });
  }

  /** `GatewaysTable.attach`. */
  async attach(id: string, controlId: string, engine: string | null, at: number): Promise<GatewayRow> {
    return (await this.conn.get<GatewayRow>(Q.attach, { id, control_id: controlId, engine, at }))!;
  }

  /** `GatewaysTable.detach`; the other controls are told when it detached. */
  async detach(id: string, controlId: string): Promise<void> {
    await this.conn.run(Q.detach, { id, control_id: controlId });
  }

  async nacked(id: string, version: number, reason: string, at: number): Promise<void> {
    await this.conn.run(Q.nack, { id, version, reason, at });
  }

  /** Set a known gateway's weight; false when there is no such gateway. */
  async setWeight(id: string, weight: number): Promise<boolean> {
    return (await this.conn.run(Q.weight, [weight, id])) === 1;
  }

  /** Record the share last pushed to each gateway, in one statement. */
  async recordShares(shares: ReadonlyMap<string, number>): Promise<void> {
    if (shares.size === 0) return;
    await this.conn.run(Q.shares, [[...shares.keys()], [...shares.values()]]);
  }

  async byId(id: string): Promise<GatewayRow | undefined> {
    return this.conn.get<GatewayRow>(Q.byId, [id]);
  }

  async list(): Promise<GatewayRow[]> {
    return this.conn.all<GatewayRow>(Q.list);
  }
}
