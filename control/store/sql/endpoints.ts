/** Wrapped upstream endpoints (`../endpoints.ts`), on either database. */
import { sql, type Conn } from '../conn';
import { parseEndpointRow, type EndpointRecord, type EndpointRow, type EndpointsTable } from '../endpoints';

const Q = {
  upsert: sql(`INSERT INTO endpoints (id, upstream, methods, timeout_ms, price, premium, sla_ms, refund_cap_per_hour,
                                      refund_cap_per_call, refund_cap_per_batch, treasury_fee_bps, headers, created_at,
                                      updated_at, removed_at, response_schema, display_name, billing)
               VALUES (@id, @upstream, @methods, @timeout_ms, @price, @premium, @sla_ms, @refund_cap_per_hour,
                       @refund_cap_per_call, @refund_cap_per_batch, @treasury_fee_bps, @headers, @created_at,
                       @updated_at, NULL, @response_schema, @display_name, @billing)
               ON CONFLICT (id) DO UPDATE SET
                 upstream = excluded.upstream, methods = excluded.methods, timeout_ms = excluded.timeout_ms,
                 price = excluded.price, premium = excluded.premium, sla_ms = excluded.sla_ms,
                 refund_cap_per_hour = excluded.refund_cap_per_hour, refund_cap_per_call = excluded.refund_cap_per_call,
                 refund_cap_per_batch = excluded.refund_cap_per_batch, treasury_fee_bps = excluded.treasury_fee_bps,
                 headers = excluded.headers, updated_at = excluded.updated_at, removed_at = NULL,
                 response_schema = excluded.response_schema, display_name = excluded.display_name, billing = excluded.billing`),
  byId: sql(`SELECT * FROM endpoints WHERE id = ? AND removed_at IS NULL`),
  list: sql(`SELECT * FROM endpoints WHERE removed_at IS NULL ORDER BY id`),
  remove: sql(`UPDATE endpoints SET removed_at = ? WHERE id = ? AND removed_at IS NULL`),
  count: sql(`SELECT count(*) FROM endpoints WHERE removed_at IS NULL`),
};

export class SqlEndpointsTable implements EndpointsTable {
  constructor(private readonly conn: Conn) {}

  async save(record: EndpointRecord): Promise<void> {
    await this.conn.run(Q.upsert, {
      ...record,
      methods: JSON.stringify(record.methods),
      headers: JSON.stringify(record.headers),
      response_schema:
        record.response_schema === null || record.response_schema === undefined ? null : JSON.stringify(record.response_schema),
      display_name: record.display_name ?? null,
      billing: record.billing ?? 'postpaid',
    });
  }

  byId(id: string): Promise<EndpointRow | undefined> {
    return this.conn.get<EndpointRow>(Q.byId, [id]);
  }

  async record(id: string): Promise<EndpointRecord | undefined> {
    const row = await this.byId(id);
    return row && parseEndpointRow(row);
  }

  list(): Promise<EndpointRow[]> {
    return this.conn.all<EndpointRow>(Q.list);
  }

  async remove(id: string, at: number): Promise<boolean> {
    return (await this.conn.run(Q.remove, [at, id])) === 1;
  }

  async count(): Promise<number> {
    return (await this.conn.value<number>(Q.count))!;
  }
}
