/**
 * The gateways that dialled in (`../gateways.ts`), on either database. On PostgreSQL, the
 * statements that change what other controls count (an ack batch, attaching, detaching) also
 * announce it to them (`GATEWAYS_CHANNEL`), in the same statement.
 */
import { sql, type Conn } from '../conn';
import { GATEWAYS_CHANNEL, foldAckRows, type GatewayAckRow, type GatewayRow, type GatewaysTable } from '../gateways';

const Q = {
  seen: sql(
    `INSERT INTO gateways (id, first_seen, last_seen) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen`,
  ),
  ack: sql(
    `INSERT INTO gateways (id, first_seen, last_seen, applied_version, applied_sha256) VALUES (@id, @at, @at, @version, @sha256)
     ON CONFLICT (id) DO UPDATE SET applied_version = excluded.applied_version, applied_sha256 = excluded.applied_sha256, last_seen = excluded.last_seen`,
  ),
  // `ackedMany`: every connected gateway acks every change, and the sync hub writes the acks of
  // one event-loop turn together, in one statement (one commit). `@rows` (JSON) holds one row
  // per gateway, `[id, first, at, version, sha256]` (folded first: one statement may not
  // change a row twice; arrays, not objects, which SQLite reads as fast as a statement per
  // row), each an ack (its id in `@acked`: the applied version and digest) or a sighting
  // (`last_seen` only); a gateway not known yet is inserted either way. PostgreSQL locks the
  // rows in id order, so concurrent batches cannot deadlock, and tells every control of an ack
  // batch, for the `--wait`s of the cluster; a batch of sightings alone is not told (the others
  // re-read the table every lease check).
  ackMany: sql({
    sqlite: `INSERT INTO gateways (id, first_seen, last_seen, applied_version, applied_sha256)
     SELECT r.value->>0, r.value->>1, r.value->>2, coalesce(r.value->>3, 0), r.value->>4 FROM json_each(@rows) AS r WHERE true
     ON CONFLICT (id) DO UPDATE SET
       applied_version = CASE WHEN excluded.id IN (SELECT value FROM json_each(@acked)) THEN excluded.applied_version ELSE applied_version END,
       applied_sha256 = CASE WHEN excluded.id IN (SELECT value FROM json_each(@acked)) THEN excluded.applied_sha256 ELSE applied_sha256 END,
       last_seen = excluded.last_seen`,
    pg: `WITH acked AS (SELECT json_array_elements_text(@acked::json) AS id),
     up AS (
     INSERT INTO gateways (id, first_seen, last_seen, applied_version, applied_sha256)
     SELECT r->>0, (r->>1)::bigint, (r->>2)::bigint, coalesce((r->>3)::bigint, 0), r->>4
     FROM json_array_elements(@rows::json) AS r
     ORDER BY (r->>0) COLLATE "C"
     ON CONFLICT (id) DO UPDATE SET
       applied_version = CASE WHEN excluded.id IN (SELECT id FROM acked) THEN excluded.applied_version ELSE gateways.applied_version END,
       applied_sha256 = CASE WHEN excluded.id IN (SELECT id FROM acked) THEN excluded.applied_sha256 ELSE gateways.applied_sha256 END,
       last_seen = excluded.last_seen
     RETURNING 1)
     SELECT pg_notify('${GATEWAYS_CHANNEL}', 'ack:' || @from::text) WHERE EXISTS (SELECT 1 FROM acked) AND @from::text IS NOT NULL`,
  }),
  nack: sql(
    `INSERT INTO gateways (id, first_seen, last_seen, last_nack_version, last_nack_reason, last_nack_at) VALUES (@id, @at, @at, @version, @reason, @at)
     ON CONFLICT (id) DO UPDATE SET last_nack_version = excluded.last_nack_version, last_nack_reason = excluded.last_nack_reason,
       last_nack_at = excluded.last_nack_at, last_seen = excluded.last_seen`,
  ),
  // Attaching and detaching are told to every control on PostgreSQL, so each counts the
  // gateways the others serve.
  attach: sql({
    sqlite: `INSERT INTO gateways (id, first_seen, last_seen, control_id, engine) VALUES (@id, @at, @at, @control_id, @engine)
     ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen, control_id = excluded.control_id, engine = excluded.engine
     RETURNING *`,
    pg: `WITH a AS (
       INSERT INTO gateways (id, first_seen, last_seen, control_id, engine) VALUES (@id, @at, @at, @control_id, @engine)
       ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen, control_id = excluded.control_id, engine = excluded.engine
       RETURNING *)
     SELECT a.* FROM a CROSS JOIN LATERAL (SELECT pg_notify('${GATEWAYS_CHANNEL}', 'member:' || @control_id::text)) n`,
  }),
  detach: sql({
    sqlite: `UPDATE gateways SET control_id = NULL WHERE id = @id AND control_id = @control_id`,
    pg: `WITH d AS (UPDATE gateways SET control_id = NULL WHERE id = @id AND control_id = @control_id RETURNING 1)
     SELECT pg_notify('${GATEWAYS_CHANNEL}', 'member:' || @control_id) FROM d`,
  }),
  byId: sql(`SELECT * FROM gateways WHERE id = ?`),
  list: sql(`SELECT * FROM gateways ORDER BY id`),
  weight: sql(`UPDATE gateways SET weight = ? WHERE id = ?`),
  // Every share of one division in one statement (16 gateways joining re-divide 16 times): a
  // JSON object, gateway id → share.
  shares: sql({
    sqlite: `UPDATE gateways SET share = x.value FROM json_each(?) AS x WHERE gateways.id = x.key`,
    pg: `UPDATE gateways SET share = x.value::float8 FROM json_each_text(?::json) AS x WHERE gateways.id = x.key`,
  }),
};

export class SqlGatewaysTable implements GatewaysTable {
  constructor(private readonly conn: Conn) {}

  async attach(id: string, controlId: string, engine: string | null, at: number): Promise<GatewayRow> {
    return (await this.conn.get<GatewayRow>(Q.attach, { id, control_id: controlId, engine, at }))!;
  }

  async detach(id: string, controlId: string): Promise<void> {
    await this.conn.run(Q.detach, { id, control_id: controlId });
  }

  async seen(id: string, at: number): Promise<void> {
    await this.conn.run(Q.seen, [id, at, at]);
  }

  async acked(id: string, version: number, sha256: string | null, at: number): Promise<void> {
    await this.conn.run(Q.ack, { id, version, sha256, at });
  }

  async ackedMany(rows: readonly GatewayAckRow[], from: string | null = null): Promise<void> {
    if (rows.length === 0) return;
    const folded = foldAckRows(rows);
    const acked = folded.filter((r) => r.version !== null).map((r) => r.id);
    const batch = folded.map((r) => [r.id, r.first, r.at, r.version, r.sha256]);
    await this.conn.run(Q.ackMany, { rows: JSON.stringify(batch), acked: JSON.stringify(acked), from });
  }

  async nacked(id: string, version: number, reason: string, at: number): Promise<void> {
    await this.conn.run(Q.nack, { id, version, reason, at });
  }

  async setWeight(id: string, weight: number): Promise<boolean> {
    return (await this.conn.run(Q.weight, [weight, id])) === 1;
  }

  async recordShares(shares: ReadonlyMap<string, number>): Promise<void> {
    if (shares.size === 0) return;
    await this.conn.run(Q.shares, [JSON.stringify(Object.fromEntries(shares))]);
  }

  byId(id: string): Promise<GatewayRow | undefined> {
    return this.conn.get<GatewayRow>(Q.byId, [id]);
  }

  list(): Promise<GatewayRow[]> {
    return this.conn.all<GatewayRow>(Q.list);
  }
}
