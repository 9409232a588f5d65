/**
 * Every gateway that has dialled in: its applied state version, its last nack, its weight in
 * the limit split, the share control last pushed to it, and the control it is attached to.
 */
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
 * appears. (One statement may not change a row twice.)
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

/**
 * The PostgreSQL channel a change to the gateways' rows that other controls count is announced
 * on (an ack batch, a gateway attaching or detaching), in the statement that makes it; the
 * payload is `<kind>:<control id>`, kind `ack` or `member` (`GatewaysEvent`).
 */
export const GATEWAYS_CHANNEL = 'svc_gateways';

export interface GatewaysTable {
  /**
   * Gateway `id` connected to control `controlId` at `at`, announcing `engine`: it is seen and
   * attached there (known from now on if it was not). Answers its row as it is now.
   */
  attach(id: string, controlId: string, engine: string | null, at: number): Promise<GatewayRow>;
  /** Gateway `id`'s stream to control `controlId` closed: detached, unless it is attached to another control by now. */
  detach(id: string, controlId: string): Promise<void>;
  seen(id: string, at: number): Promise<void>;
  acked(id: string, version: number, sha256: string | null, at: number): Promise<void>;
  /**
   * Acks and sightings of many gateways (`GatewayAckRow`) in one statement: all stored or, on
   * a failure, none. Rows of one gateway apply in order, as `acked` and `seen` one by one would.
   * `from`: the control writing them, which a shared database tells the other controls of
   * (`ClusterTable.onGateways`) when the batch holds an ack; a SQLite store has none to tell.
   */
  ackedMany(rows: readonly GatewayAckRow[], from?: string | null): Promise<void>;
  nacked(id: string, version: number, reason: string, at: number): Promise<void>;
  /** Set a known gateway's weight; false when there is no such gateway. */
  setWeight(id: string, weight: number): Promise<boolean>;
  /** Record the share last pushed to each gateway, in one statement. */
  recordShares(shares: ReadonlyMap<string, number>): Promise<void>;
  byId(id: string): Promise<GatewayRow | undefined>;
  /** Every gateway, by id. */
  list(): Promise<GatewayRow[]>;
}
