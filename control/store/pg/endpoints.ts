/** Wrapped upstream endpoints on PostgreSQL: `../endpoints.ts`'s statements (the same text) and parsing, asynchronous. */
import { ENDPOINT_SQL, endpointParams, parseEndpointRow, type EndpointRecord, type EndpointRow, type EndpointsTable } from '../endpoints';
import type { Async } from '../seam';
import { sql, type PgConn } from './conn';

const Q = {
  upsert: sql(ENDPOINT_SQL.upsert),
  byId: sql(ENDPOINT_SQL.byId),
  list: sql(ENDPOINT_SQL.list),
  remove: sql(ENDPOINT_SQL.remove),
  count: sql(ENDPOINT_SQL.count),
};

export class PgEndpointsTable implements Async<EndpointsTable> {
  constructor(private readonly conn: PgConn) {}

  /** Insert, or overwrite (and revive a removed endpoint with the same id). */
  async save(record: EndpointRecord): Promise<void> {
    await this.conn.run(Q.upsert, endpointParams(record));
  }

  async byId(id: string): Promise<EndpointRow | undefined> {
    return this.conn.get<EndpointRow>(Q.byId, [id]);
  }

  async record(id: string): Promise<EndpointRecord | undefined> {
    const row = await this.byId(id);
    return row && parseEndpointRow(row);
  }

  async list(): Promise<EndpointRow[]> {
    return this.conn.all<EndpointRow>(Q.list);
  }

  async remove(id: string, at: number): Promise<boolean> {
    return (await this.conn.run(Q.remove, [at, id])) === 1;
  }

  async count(): Promise<number> {
    return (await this.conn.value<number>(Q.count))!;
  }
}
