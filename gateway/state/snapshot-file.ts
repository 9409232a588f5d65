/**
 * The gateway's last-known-good state on disk, so it can serve when control is down.
 *
 * - `snapshot.ndjson`: the last full snapshot exactly as received (its `snapshot_end` line
 *   carries the SHA-256 of the lines before it). Written to a temp file, fsynced, renamed.
 * - `deltas.ndjson`: every delta applied since, one sealed line each, appended once it was
 *   applied (a process crash loses none) and fsynced in the background right after, so the
 *   gateway's ack never waits on the disk: a power loss can lose the deltas of the sync in
 *   flight, and the gateway then holds an older version and is sent them again by control,
 *   which it tells the version it holds (a gateway acks what it enforces, in memory, as an
 *   xDS client does). Truncated when a new full snapshot lands.
 *
 * Loading replays the snapshot (verifying its digest) and then each delta whose seal and base
 * match, stopping at the first that does not (a torn last line after a crash).
 */
import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
  createReadStream,
  existsSync,
  ftruncateSync,
} from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SnapshotEnd, verifySealedLine } from '../../protocol/snapshot';
import { parseDelta } from './delta-line';
import { GatewayState, SnapshotBuilder, UpdateRejected, safeJson } from './state';

export const SNAPSHOT_FILE = 'snapshot.ndjson';
export const DELTAS_FILE = 'deltas.ndjson';

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface FullSnapshotWriter {
  write(line: string): void;
  commit(): void;
  abort(): void;
}

export class SnapshotFile {
  readonly dir: string;
  private deltasFd: number | null = null;
  /** Deltas written since the last background sync started. */
  private dirty = false;
  /** The background sync in flight, if any. */
  private syncing: Promise<void> | null = null;

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** Start writing a full snapshot; nothing replaces the old one until `commit()`. */
  beginFull(): FullSnapshotWriter {
    const final = join(this.dir, SNAPSHOT_FILE);
    const tmp = `${final}.${process.pid}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    let open = true;
    const close = () => {
      if (open) closeSync(fd);
      open = false;
    };
    return {
      write: (line) => void writeSync(fd, line + '\n'),
      commit: () => {
        fsyncSync(fd);
        close();
        renameSync(tmp, final);
        fsyncDir(this.dir);
        this.resetDeltas();
      },
      abort: () => {
        close();
        rmSync(tmp, { force: true });
      },
    };
  }

  /**
   * Record a delta that has been applied: written when this returns, durable once the
   * background sync it starts (or the one after the sync in flight) has run.
   */
  appendDelta(line: string): void {
    if (this.deltasFd === null) this.deltasFd = openSync(join(this.dir, DELTAS_FILE), 'a', 0o600);
    writeSync(this.deltasFd, line + '\n');
    this.dirty = true;
    this.syncInBackground();
  }

  /** Resolves once every delta appended so far is on disk. */
  async synced(): Promise<void> {
    while (this.syncing !== null) await this.syncing;
  }

  /** One `fdatasync` at a time on the thread pool; deltas appended meanwhile wait for the next. */
  private syncInBackground(): void {
    const fd = this.deltasFd;
    if (this.syncing !== null || !this.dirty || fd === null) return;
    this.dirty = false;
    this.syncing = new Promise<void>((done) =>
      // An error leaves the deltas written but maybe not durable, as a power loss would: the
      // gateway reloads what is there and control sends it the rest.
      fdatasync(fd, () => {
        this.syncing = null;
        done();
        this.syncInBackground();
      }),
    );
  }

  private resetDeltas(): void {
    if (this.deltasFd === null) this.deltasFd = openSync(join(this.dir, DELTAS_FILE), 'a', 0o600);
    ftruncateSync(this.deltasFd, 0);
    fdatasyncSync(this.deltasFd);
  }

  /** Close the deltas file once every delta appended is on disk. */
  async close(): Promise<void> {
    await this.synced();
    if (this.deltasFd !== null) closeSync(this.deltasFd);
    this.deltasFd = null;
  }

  /** The persisted state, or null when there is none or the snapshot does not verify. */
  async load(): Promise<{ state: GatewayState; deltasApplied: number } | null> {
    const path = join(this.dir, SNAPSHOT_FILE);
    if (!existsSync(path)) return null;
    let builder: SnapshotBuilder | null = null;
    let state: GatewayState | null = null;
    for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
      if (line === '') continue;
      if (builder === null) {
        builder = new SnapshotBuilder(line);
      } else if (line.startsWith('{"type":"keys"')) {
        builder.addKeysLine(line);
      } else {
        const end = SnapshotEnd.safeParse(safeJson(line));
        if (!end.success) throw new UpdateRejected('persisted snapshot has an unexpected line');
        state = builder.finish(end.data.version, end.data.sha256);
        break;
      }
    }
    if (state === null) return null;
    let deltasApplied = 0;
    let validBytes = 0;
    const deltasPath = join(this.dir, DELTAS_FILE);
    if (existsSync(deltasPath)) {
      for await (const line of createInterface({ input: createReadStream(deltasPath), crlfDelay: Infinity })) {
        if (line === '' || verifySealedLine(line) === null) break;
        const delta = parseDelta(safeJson(line));
        if (!delta.success || delta.data.base !== state.version) break;
        state.applyDelta(delta.data);
        deltasApplied++;
        validBytes += Buffer.byteLength(line) + 1;
      }
      // Drop a torn or stale tail so later appends follow the last applied delta.
      this.deltasFd = openSync(deltasPath, 'a', 0o600);
      ftruncateSync(this.deltasFd, validBytes);
      fdatasyncSync(this.deltasFd);
    }
    return { state, deltasApplied };
  }
}
