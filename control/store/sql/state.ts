/**
 * The state gateways enforce, as the store versions it (on either database): the version, the
 * entities each version changed (for deltas), the `meta` integers, the key as a delta carries
 * it, and what every `Store.mutate` commits with its change (the audit row, the version bump).
 */
import type { SnapshotKey } from '../../../protocol/snapshot';
import { sql, type Conn } from '../conn';
import type { AuditTable } from '../audit';
import type { Audit, MutationContext, StateChange } from '../changes';
import { liveKey } from './snapshot-reads';

const Q = {
  version: sql(`SELECT value FROM meta WHERE name = 'state_version'`),
  bump: sql(`UPDATE meta SET value = value + 1 WHERE name = 'state_version' RETURNING value`),
  change: sql(`INSERT INTO state_changes (version, kind, entity) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`),
  changesSince: sql(`SELECT DISTINCT kind, entity FROM state_changes WHERE version > ? AND version <= ? ORDER BY kind, entity`),
  oldestChange: sql(`SELECT min(version) FROM state_changes`),
  metaGet: sql(`SELECT value FROM meta WHERE name = ?`),
  metaSet: sql(`INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`),
};

/** The state's reads and the `meta` integers, on `conn`. */
export interface StateTables {
  /** The key as gateways must enforce it now, or null when it admits nothing. */
  readonly liveKey: (id: string, now: number) => Promise<SnapshotKey | null>;
  /** Version of the state gateways enforce; grows by one with every snapshot-relevant write. */
  readonly version: () => Promise<number>;
  /**
   * Entities changed after version `from` up to `to`, or null when `from` is older than the
   * recorded history (the caller then sends a full snapshot).
   */
  readonly changesSince: (from: number, to: number) => Promise<StateChange[] | null>;
  /** An integer kept in the `meta` table (inside `mutate` when it must be audited). */
  readonly meta: (name: string) => Promise<number | null>;
  readonly setMeta: (name: string, value: number) => Promise<void>;
}

const versionOn = async (conn: Conn): Promise<number> => (await conn.value<number>(Q.version))!;

export function stateTables(conn: Conn): StateTables {
  return {
    liveKey: (id, now) => liveKey(conn, id, now),
    version: () => versionOn(conn),
    async changesSince(from, to) {
      const oldest = (await conn.value<number | null>(Q.oldestChange)) ?? null;
      if (from < 1 || from > to || (oldest !== null && from + 1 < oldest)) return null;
      return conn.all<StateChange>(Q.changesSince, [from, to]);
    },
    meta: async (name) => (await conn.value<number>(Q.metaGet, [name])) ?? null,
    setMeta: async (name, value) => void (await conn.run(Q.metaSet, [name, value])),
  };
}

/**
 * What `Store.mutate` commits with its change, inside its transaction (`conn`): the audit row
 * (`log`), and when the change is one gateways must see, the version bump with each changed entity.
 * Answers the state version after the change and whether it bumped it.
 */
export async function commitMutation(
  conn: Conn,
  log: Pick<AuditTable, 'record'>,
  ctx: MutationContext,
  audit: Audit,
): Promise<{ version: number; bumped: boolean }> {
  await log.record(ctx.now, ctx.actor, audit.action, audit.target ?? null, audit.detail ?? {}, ctx);
  if (!audit.changes || audit.changes.length === 0) return { version: await versionOn(conn), bumped: false };
  const version = (await conn.value<number>(Q.bump))!;
  for (const change of audit.changes) await conn.run(Q.change, [version, change.kind, change.entity]);
  return { version, bumped: true };
}
