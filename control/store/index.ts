/**
 * The control store: one SQLite file, one connection, one module per table family. Every
 * mutation goes through `mutate()`, which runs it in one IMMEDIATE transaction together with
 * its audit row and, when it changes what gateways enforce, the state version bump.
 */
import { openDatabase, schemaVersion, type Db } from './db';
import { AuditTable } from './audit';
import { ChangelogTable } from './changelog';
import { EndpointsTable } from './endpoints';
import { FlagsTable } from './flags';
import { KeysTable } from './keys';

export interface MutationContext {
  /** Name of the admin token (or process) making the change. */
  actor: string;
  /** Clock reading for this mutation, in ms. */
  now: number;
}

export interface Audit {
  action: string;
  target?: string | null;
  detail?: Record<string, unknown>;
  /** True when gateways must see the change (keys, flags, endpoints). */
  snapshot?: boolean;
}

export class Store {
  readonly db: Db;
  readonly path: string;
  readonly keys: KeysTable;
  readonly flags: FlagsTable;
  readonly endpoints: EndpointsTable;
  readonly changelog: ChangelogTable;
  readonly audit: AuditTable;
  private readonly versionStmt;
  private readonly bumpStmt;
  private readonly listeners = new Set<(version: number) => void>();

  private constructor(db: Db, path: string) {
    this.db = db;
    this.path = path;
    this.keys = new KeysTable(db);
    this.flags = new FlagsTable(db);
    this.endpoints = new EndpointsTable(db);
    this.changelog = new ChangelogTable(db);
    this.audit = new AuditTable(db);
    this.versionStmt = db.prepare(`SELECT value FROM meta WHERE name = 'state_version'`).pluck();
    this.bumpStmt = db.prepare(`UPDATE meta SET value = value + 1 WHERE name = 'state_version' RETURNING value`).pluck();
  }

  static open(path: string): Store {
    return new Store(openDatabase(path), path);
  }

  /** Version of the state gateways enforce; grows by one with every snapshot-relevant write. */
  version(): number {
    return this.versionStmt.get() as number;
  }

  schemaVersion(): number {
    return schemaVersion(this.db);
  }

  /**
   * Run `fn` and record `audit` in one transaction. Returns `fn`'s result and the state
   * version after the change. Listeners hear about version bumps after the commit.
   */
  mutate<T>(ctx: MutationContext, audit: Audit, fn: () => T): { result: T; version: number } {
    let bumped = false;
    const tx = this.db.transaction(() => {
      const result = fn();
      this.audit.record(ctx.now, ctx.actor, audit.action, audit.target ?? null, audit.detail ?? {});
      let version: number;
      if (audit.snapshot) {
        version = this.bumpStmt.get() as number;
        bumped = true;
      } else {
        version = this.version();
      }
      return { result, version };
    });
    const out = tx.immediate();
    if (bumped) for (const listener of this.listeners) listener(out.version);
    return out;
  }

  /** Hear about every committed state version bump. Returns the unsubscribe function. */
  onVersion(listener: (version: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  pragma(name: string): unknown {
    return this.db.pragma(name, { simple: true });
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
