/**
 * This gateway's share of every key's limit (`limits.mode`, docs/design.md §4): the fraction control
 * last pushed on the sync stream (`share` lines). The handler multiplies each key's limit and
 * burst by it; keyless per-address limits stay whole.
 *
 * Fail static: the gateway keeps the last share it got while control is away, and persists it
 * (`share.json` beside the snapshot: temp file, fsync, rename), so a restart without control
 * enforces the same share. Until a share has ever arrived it is 1 (the whole limit).
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ShareLine } from '../../protocol/snapshot';
import { IsoTime } from '../../protocol/wire';

export const SHARE_FILE = 'share.json';

/** What `share.json` holds: the last share line and when it arrived. */
const Persisted = ShareLine.omit({ type: true }).extend({ received_at: IsoTime });
export type ShareState = z.infer<typeof Persisted>;

export class LimitShare {
  private readonly path: string;
  private current: ShareState | null = null;
  /** The last change could not be written to disk (it applies in memory). */
  persistFailed = false;

  /** @param dir the gateway's snapshot directory; a readable `share.json` there is loaded. */
  constructor(dir: string) {
    this.path = join(dir, SHARE_FILE);
    try {
      const parsed = Persisted.safeParse(JSON.parse(readFileSync(this.path, 'utf8')));
      if (parsed.success) this.current = parsed.data;
    } catch {
      // none yet, or unreadable: the whole limit until control says otherwise
    }
  }

  /** The share in force: the last one received, or 1 before any. */
  get value(): number {
    return this.current?.share ?? 1;
  }

  /** The last share received (null before any), for `/health`. */
  get state(): ShareState | null {
    return this.current;
  }

  /**
   * Take a `share` line from the stream. Returns false (and changes nothing) when it does not
   * parse. Persisted before it returns when the share changed.
   */
  apply(line: unknown, now = Date.now()): boolean {
    const parsed = ShareLine.safeParse(line);
    if (!parsed.success) return false;
    const { share, gateways, mode } = parsed.data;
    const changed =
      this.current === null || this.current.share !== share || this.current.gateways !== gateways || this.current.mode !== mode;
    this.current = { share, gateways, mode, received_at: new Date(now).toISOString() };
    if (changed || this.persistFailed) this.persist();
    return true;
  }

  /** A share that cannot be written still applies in memory; the next change tries again. */
  private persist(): void {
    const tmp = `${this.path}.${process.pid}.tmp`;
    try {
      const fd = openSync(tmp, 'w', 0o600);
      try {
        writeSync(fd, JSON.stringify(this.current) + '\n');
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.path);
    } catch {
      this.persistFailed = true;
      return;
    }
    this.persistFailed = false;
  }
}
