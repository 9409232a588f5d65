/**
 * The controls sharing one PostgreSQL database (`controls`), the settler's lease
 * (`settler_lease`, one row) and the digests of the tokens they all accept (`control_tokens`),
 * migration 3. Every time is read from the database's clock in the
 * statement that uses it, so controls whose clocks disagree agree on when a lease lapses.
 */
import { InvariantError } from '../../../protocol/coded-error';
import type { BuiltSnapshot, GatewaysEvent, SnapshotSource } from '../cluster';
import type { ClusterTable, ControlRow, StoredToken } from '../cluster';
import { sql, type PgConn } from './conn';

/** Now in ms on the database's clock (advancing within a transaction, unlike `now()`). */
const NOW = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/**
 * Key of the session-level advisory lock a control holds while it builds the snapshot it
 * shares ("svc_snp" in ASCII): the others wait for it, then read what it stored.
 */
const SNAPSHOT_LOCK_KEY = '32499791496965744';

const Q = {
  heartbeat: sql(
    `INSERT INTO controls (id, url, started_at, last_seen) VALUES (@id, @url, @started_at, ${NOW})
     ON CONFLICT (id) DO UPDATE SET url = excluded.url, started_at = excluded.started_at, last_seen = excluded.last_seen`,
  ),
  forget: sql(`DELETE FROM controls WHERE last_seen < ${NOW} - ?::bigint`),
  leave: sql(`DELETE FROM controls WHERE id = ?`),
  list: sql(
    `SELECT c.id, c.url, c.started_at, c.last_seen, coalesce(l.holder = c.id AND l.expires_at > ${NOW}, false) AS leader
     FROM controls c LEFT JOIN settler_lease l ON l.id = 1
     ORDER BY c.started_at, c.id`,
  ),
  // Taken when there is no lease, when it lapsed, or renewed by its holder; the row lock makes
  // racing claims take turns, and each sees the one before it.
  claim: sql(
    `INSERT INTO settler_lease (id, holder, expires_at) VALUES (1, @id, ${NOW} + @lease_ms::bigint)
     ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
     WHERE settler_lease.holder = excluded.holder OR settler_lease.expires_at <= ${NOW}
     RETURNING holder`,
  ),
  release: sql(`UPDATE settler_lease SET expires_at = 0 WHERE id = 1 AND holder = ?`),
  holder: sql(
    `SELECT l.holder AS id, c.url FROM settler_lease l LEFT JOIN controls c ON c.id = l.holder
     WHERE l.id = 1 AND l.expires_at > ${NOW}`,
  ),
  tokenInit: sql(
    `INSERT INTO control_tokens (name, sha256, control_id, file, created_at) VALUES (@name, @sha256, @control_id, @file, @created_at)
     ON CONFLICT (name) DO NOTHING`,
  ),
  token: sql(`SELECT name, sha256, control_id, file FROM control_tokens WHERE name = ?`),
  snapshot: sql(`SELECT version, sha256, lines FROM shared_snapshots WHERE epoch = ? AND version >= ? ORDER BY version DESC LIMIT 1`),
  snapshotLines: sql(`SELECT line FROM shared_snapshot_lines WHERE epoch = ? AND version = ? ORDER BY n`),
  others: sql(`SELECT count(*) FROM controls WHERE id <> ?`),
  dropSnapshots: sql(`DELETE FROM shared_snapshots WHERE epoch <> @epoch OR version < @version`),
  addSnapshot: sql(
    `INSERT INTO shared_snapshots (epoch, version, sha256, lines, built_by, built_at)
     VALUES (@epoch, @version, @sha256, @lines, @built_by, ${NOW})`,
  ),
  // One line a statement: a line is a single text parameter, sent as it is (an array of them
  // would be quoted and escaped, some 20 MB of JSON per 100,000 keys).
  addSnapshotLine: sql(`INSERT INTO shared_snapshot_lines (epoch, version, n, line) VALUES (?, ?, ?, ?)`),
};

export class PgClusterTable implements ClusterTable {
  private readonly gatewayListeners = new Set<(event: GatewaysEvent) => void>();

  constructor(private readonly conn: PgConn) {}

  onGateways(listener: (event: GatewaysEvent) => void): () => void {
    this.gatewayListeners.add(listener);
    return () => this.gatewayListeners.delete(listener);
  }

  /** Tell the listeners a gateways announcement the store's listening connection heard. */
  heardGateways(event: GatewaysEvent): void {
    for (const listener of this.gatewayListeners) listener(event);
  }

  async heartbeat(id: string, url: string, startedAt: number, forgetMs: number): Promise<void> {
    await this.conn.run(Q.heartbeat, { id, url, started_at: startedAt });
    await this.conn.run(Q.forget, [forgetMs]);
  }

  async leave(id: string): Promise<void> {
    await this.releaseLease(id);
    await this.conn.run(Q.leave, [id]);
  }

  list(): Promise<ControlRow[]> {
    return this.conn.all<ControlRow>(Q.list);
  }

  async claimLease(id: string, leaseMs: number): Promise<boolean> {
    return (await this.conn.value<string>(Q.claim, { id, lease_ms: leaseMs })) === id;
  }

  async releaseLease(id: string): Promise<void> {
    await this.conn.run(Q.release, [id]);
  }

  async shareToken(token: StoredToken, now: number): Promise<StoredToken> {
    await this.conn.run(Q.tokenInit, { ...token, created_at: now });
    return (await this.conn.get<StoredToken>(Q.token, [token.name]))!;
  }

  async leaseHolder(): Promise<{ id: string; url: string | null } | null> {
    return (await this.conn.get<{ id: string; url: string | null }>(Q.holder)) ?? null;
  }

  async snapshotOnce(epoch: number, atLeast: number, controlId: string, build: () => Promise<BuiltSnapshot>): Promise<SnapshotSource> {
    const stored = await storedSnapshot(this.conn, epoch, atLeast);
    if (stored !== null) return { stored };
    // A session lock, not a transaction's: a build of 100,000 keys can outlast the idle-in-
    // transaction limit on a busy host.
    return this.conn.exclusive(SNAPSHOT_LOCK_KEY, async () => {
      // Another control may have built it while this one waited for the lock.
      const storedMeanwhile = await storedSnapshot(this.conn, epoch, atLeast);
      if (storedMeanwhile !== null) return { stored: storedMeanwhile };
      const built = await build();
      // Alone on the database, nobody would read it: writing some 20 MB per 100,000 keys for
      // nobody is not worth it (a control that starts later builds its first one itself).
      if ((await this.conn.value<number>(Q.others, [controlId]))! > 0) {
        await this.conn.tx(async (c) => {
          await c.run(Q.dropSnapshots, { epoch, version: built.version });
          await c.run(Q.addSnapshot, {
            epoch,
            version: built.version,
            sha256: built.sha256,
            lines: built.lines.length,
            built_by: controlId,
          });
          for (let n = 0; n < built.lines.length; n++) await c.run(Q.addSnapshotLine, [epoch, built.version, n, built.lines[n]]);
        });
      }
      return { built };
    });
  }
}

/** The stored snapshot of `epoch` at `atLeast` or newer, read in one transaction (it may be replaced meanwhile), or null. */
function storedSnapshot(conn: PgConn, epoch: number, atLeast: number): Promise<BuiltSnapshot | null> {
  return conn.tx(async (c) => {
    const head = await c.get<{ version: number; sha256: string; lines: number }>(Q.snapshot, [epoch, atLeast]);
    if (head === undefined) return null;
    const lines = await c.column<string>(Q.snapshotLines, [epoch, head.version]);
    if (lines.length !== head.lines)
      throw new InvariantError(`shared snapshot ${head.version}: ${lines.length} lines stored of ${head.lines}`);
    return { version: head.version, sha256: head.sha256, lines };
  }, 'read');
}
