/**
 * Wrapped upstream endpoints. Injected header values are secrets: `view()` lists their
 * names only; `snapshotRows()` is the one reader of the values (for the gateway snapshot).
 * Removal is soft (`removed_at`) so outcomes and ledger entries keep their endpoint.
 */
import type { Db } from './db';
import type { EndpointView } from '../../protocol/admin';
import type { HttpMethod } from '../../protocol/endpoint';
import type { JsonSchema } from '../../protocol/response-schema';

/**
 * A stored endpoint: the admin view's fields, with the JSON columns as text, times in ms and
 * the header values themselves (the view lists only their names).
 */
export interface EndpointRow extends Omit<EndpointView, 'methods' | 'injected_headers' | 'response_schema' | 'created_at' | 'updated_at'> {
  /** JSON array of methods. */
  methods: string;
  /** JSON object of injected headers, values included. */
  headers: string;
  created_at: number;
  updated_at: number;
  removed_at: number | null;
  /** JSON text of the response schema (migration 6), or null. */
  response_schema: string | null;
}

export type EndpointRecord = Omit<EndpointRow, 'methods' | 'headers' | 'removed_at' | 'response_schema' | 'display_name'> & {
  /** Absent or null: no display name. */
  display_name?: string | null;
  methods: HttpMethod[];
  headers: Record<string, string>;
  response_schema: JsonSchema | null;
};

/** A stored row with its JSON columns parsed. */
export function parseEndpointRow(row: EndpointRow): EndpointRecord {
  const { removed_at: _removed, ...rest } = row;
  return {
    ...rest,
    methods: JSON.parse(row.methods) as HttpMethod[],
    headers: JSON.parse(row.headers) as Record<string, string>,
    response_schema:
      row.response_schema === null || row.response_schema === undefined ? null : (JSON.parse(row.response_schema) as JsonSchema),
  };
}

export function endpointView(row: EndpointRow): EndpointView {
  const { headers, created_at, updated_at, display_name, ...fields } = parseEndpointRow(row);
  return {
    ...fields,
    display_name: display_name ?? null,
    injected_headers: Object.keys(headers).sort(),
    created_at: new Date(created_at).toISOString(),
    updated_at: new Date(updated_at).toISOString(),
  };
}

/** The parameters of the upsert for `record`: its JSON columns as text. */
export function endpointParams(record: EndpointRecord): Record<string, unknown> {
  return {
    ...record,
    methods: JSON.stringify(record.methods),
    headers: JSON.stringify(record.headers),
    response_schema:
      record.response_schema === null || record.response_schema === undefined ? null : JSON.stringify(record.response_schema),
    display_name: record.display_name ?? null,
  };
}

/** The table's statements, in the text both dialects run (the PostgreSQL store compiles the same). */
export const ENDPOINT_SQL = {
  upsert: `INSERT INTO endpoints (id, upstream, methods, timeout_ms, price, premium, sla_ms, refund_cap_per_hour,
                                  treasury_fee_bps, headers, created_at, updated_at, removed_at, response_schema, display_name)
           VALUES (@id, @upstream, @methods, @timeout_ms, @price, @premium, @sla_ms, @refund_cap_per_hour,
                   @treasury_fee_bps, @headers, @created_at, @updated_at, NULL, @response_schema, @display_name)
           ON CONFLICT (id) DO UPDATE SET
             upstream = excluded.upstream, methods = excluded.methods, timeout_ms = excluded.timeout_ms,
             price = excluded.price, premium = excluded.premium, sla_ms = excluded.sla_ms,
             refund_cap_per_hour = excluded.refund_cap_per_hour, treasury_fee_bps = excluded.treasury_fee_bps,
             headers = excluded.headers, updated_at = excluded.updated_at, removed_at = NULL,
             response_schema = excluded.response_schema, display_name = excluded.display_name`,
  byId: `SELECT * FROM endpoints WHERE id = ? AND removed_at IS NULL`,
  list: `SELECT * FROM endpoints WHERE removed_at IS NULL ORDER BY id`,
  remove: `UPDATE endpoints SET removed_at = ? WHERE id = ? AND removed_at IS NULL`,
  count: `SELECT count(*) AS n FROM endpoints WHERE removed_at IS NULL`,
};

export class EndpointsTable {
  private readonly upsertStmt;
  private readonly byIdStmt;
  private readonly listStmt;
  private readonly removeStmt;
  private readonly countStmt;

  constructor(db: Db) {
    this.upsertStmt = db.prepare(ENDPOINT_SQL.upsert);
    this.byIdStmt = db.prepare(ENDPOINT_SQL.byId);
    this.listStmt = db.prepare(ENDPOINT_SQL.list);
    this.removeStmt = db.prepare(ENDPOINT_SQL.remove);
    this.countStmt = db.prepare(ENDPOINT_SQL.count);
  }

  /** Insert, or overwrite (and revive a removed endpoint with the same id). */
  save(record: EndpointRecord): void {
    this.upsertStmt.run(endpointParams(record));
  }

  byId(id: string): EndpointRow | undefined {
    return this.byIdStmt.get(id) as EndpointRow | undefined;
  }

  record(id: string): EndpointRecord | undefined {
    const row = this.byId(id);
    return row && parseEndpointRow(row);
  }

  list(): EndpointRow[] {
    return this.listStmt.all() as EndpointRow[];
  }

  remove(id: string, at: number): boolean {
    return this.removeStmt.run(at, id).changes === 1;
  }

  count(): number {
    return (this.countStmt.get() as { n: number }).n;
  }
}
