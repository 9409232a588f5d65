/**
 * What several controls sharing one PostgreSQL database keep in it (`Store.cluster`; the
 * PostgreSQL side is `pg/cluster-table.ts`, and a SQLite store has none): the registry of the
 * controls, the settler's lease among them, and the digests of the tokens they all accept.
 */

/** One control on a shared database, as the registry holds it (times in ms, the database's clock). */
export interface ControlRow {
  id: string;
  /** The admin URL it serves. */
  url: string;
  started_at: number;
  last_seen: number;
  /** Whether it holds the settler's lease now. */
  leader: boolean;
}

/** The admin, sync or metrics token every control on a shared database accepts, as stored: its digest, never the token. */
export interface StoredToken {
  name: 'admin' | 'sync' | 'metrics';
  /** SHA-256 of the token. */
  sha256: Buffer;
  /** The control that made it (the first to start on the database). */
  control_id: string;
  /** Where that control wrote it; null when it was configured (its environment or config file). */
  file: string | null;
}

/**
 * The controls sharing one PostgreSQL database and the settler's lease among them. Times are
 * the database's, so controls whose clocks disagree agree on when a lease lapses.
 */
export interface ClusterTable {
  /**
   * Say control `id` (serving `url`, started at `startedAt`) is alive now; forget controls not
   * seen for `forgetMs`. Answers nothing.
   */
  heartbeat(id: string, url: string, startedAt: number, forgetMs: number): Promise<void>;
  /** Control `id` stops: its row goes, and its lease if it holds it. */
  leave(id: string): Promise<void>;
  /** Every control registered, oldest start first. */
  list(): Promise<ControlRow[]>;
  /**
   * Take the settler's lease for `leaseMs` if it is free, lapsed or `id`'s own (then renew it).
   * Answers whether `id` holds it now.
   */
  claimLease(id: string, leaseMs: number): Promise<boolean>;
  /** Give the lease up now if `id` holds it, so another control takes it at its next claim. */
  releaseLease(id: string): Promise<void>;
  /** The control holding an unexpired lease, with its URL (null when it is not registered), or null. */
  leaseHolder(): Promise<{ id: string; url: string | null } | null>;
  /** Store `token` unless a token of its name is stored already; answers the one stored (the first). */
  shareToken(token: StoredToken, now: number): Promise<StoredToken>;
  /**
   * Hear when a control changed the gateways' rows in a way the others count: an ack batch, a
   * gateway attaching or detaching (`from`: that control; null after the listening connection
   * reopened, when anything may have changed). Returns the unsubscribe function.
   */
  onGateways(listener: (event: GatewaysEvent) => void): () => void;
  /**
   * A full snapshot of `epoch` at version `atLeast` or newer, built once for every control on
   * the database: the stored one when it is new enough (`stored` gets it); else `build` runs
   * while the other controls' calls wait for it, and what it answers is stored for them (when
   * another control is registered) before they go on, replacing the older one. A build that
   * fails stores nothing, and the next control in line builds. Rejects when the build or the
   * storing fails (the build's lines are good even then).
   */
  snapshotOnce(epoch: number, atLeast: number, controlId: string, build: () => Promise<BuiltSnapshot>): Promise<SnapshotSource>;
}

/** A full snapshot as gateways receive it, to share between controls (`ClusterTable.snapshotOnce`). */
export interface BuiltSnapshot {
  version: number;
  sha256: string;
  /** Its lines in order, without their newlines. */
  lines: string[];
}

/** Where `ClusterTable.snapshotOnce`'s snapshot came from: this control's build, or another's stored one. */
export type SnapshotSource = { built: BuiltSnapshot } | { stored: BuiltSnapshot };

/** A change to the gateways' rows (`ClusterTable.onGateways`). */
export interface GatewaysEvent {
  kind: 'ack' | 'member';
  /** The control that made it; null when unknown. */
  from: string | null;
}
