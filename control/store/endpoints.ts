/**
 * Wrapped upstream endpoints. Injected header values are secrets: `view()` lists their
 * names only; `snapshotRows()` is the one reader of the values (for the gateway snapshot).
 * Removal is soft (`removed_at`) so outcomes and ledger entries keep their endpoint.
 */
import type { Billing, EndpointView } from '../../protocol/admin';
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

export type EndpointRecord = Omit<EndpointRow, 'methods' | 'headers' | 'removed_at' | 'response_schema' | 'display_name' | 'billing'> & {
  /** Absent or null: no display name. */
  display_name?: string | null;
  /** Absent: `postpaid`. */
  billing?: Billing;
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

export interface EndpointsTable {
  /** Insert, or overwrite (and revive a removed endpoint with the same id). */
  save(record: EndpointRecord): Promise<void>;
  /** A live (not removed) endpoint's row. */
  byId(id: string): Promise<EndpointRow | undefined>;
  /** A live endpoint, its JSON columns parsed. */
  record(id: string): Promise<EndpointRecord | undefined>;
  /** Every live endpoint, by id. */
  list(): Promise<EndpointRow[]>;
  /** Remove a live endpoint (softly: `removed_at`); answers whether one was removed. */
  remove(id: string, at: number): Promise<boolean>;
  /** How many endpoints are live. */
  count(): Promise<number>;
}
