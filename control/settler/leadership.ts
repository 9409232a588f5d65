/**
 * Which control's settler settles. On SQLite there is one control per data dir, and it always
 * does (`soleLeadership`). On PostgreSQL several controls may share the database, and the
 * settler runs on the cadence only in the one holding the settler's lease (`LeaseLeadership`):
 * one row in the database, taken when free or lapsed and renewed by its holder every cadence
 * (at most every third of `settler.leaseS`, at least every `LEASE_TICK_MIN_MS`). A control that
 * stops gives the lease up, and the next claim of another takes it; one that dies stops renewing,
 * and another takes it once it lapses: within `settler.leaseS` and one cadence either way. The
 * control that takes it settles at once (`onTaken`), not a cadence later.
 *
 * The holder counts itself leading until `leaseS` after it sent its last successful claim,
 * which is never later than the lease's expiry in the database (set when the claim ran), so
 * two controls never both count themselves leading. Leadership only decides who settles on the
 * cadence: settlement itself is serialised by the store's writer lock, so a run-once through
 * any control, or two settlers racing, still settles every call once.
 */
import type { Logger } from '../../runtime/log';
import type { SettlerLeader } from '../../protocol/settlement';
import type { ClusterTable } from '../store';

/** Fewest ms between two claims of the lease, whatever the cadence. @default 100 */
export const LEASE_TICK_MIN_MS = 100;

export interface Leadership {
  /** Whether this control's settler settles on the cadence now. */
  leading(): boolean;
  /** The control whose settler settles, or null while none holds the lease. */
  leader(): Promise<SettlerLeader | null>;
  /** Claim the lease once, then keep claiming it on the tick. */
  start(): Promise<void>;
  /** Stop claiming, and give the lease up if this control holds it. */
  stop(): Promise<void>;
  /** Call `listener` whenever this control takes the lease (the settler then settles at once, not a cadence later). */
  onTaken(listener: () => void): void;
}

/** The one control of a SQLite store (or a settler alone in a test or a bench): always leads. */
export function soleLeadership(self: () => SettlerLeader | null): Leadership {
  return {
    leading: () => true,
    leader: () => Promise.resolve(self()),
    start: () => Promise.resolve(),
    stop: () => Promise.resolve(),
    // It leads from the start and never takes the lease over.
    onTaken: () => undefined,
  };
}

export interface LeaseOptions {
  cluster: ClusterTable;
  /** This control's id. */
  id: string;
  /** `settler.leaseS` in ms. */
  leaseMs: number;
  /** `settler.cadenceMs`. */
  cadenceMs: number;
  log: Logger;
}

/** Every how many ms a control claims the lease: its cadence, within [LEASE_TICK_MIN_MS, leaseMs / 3]. */
export function leaseTickMs(cadenceMs: number, leaseMs: number): number {
  return Math.max(LEASE_TICK_MIN_MS, Math.min(cadenceMs, Math.floor(leaseMs / 3)));
}

export class LeaseLeadership implements Leadership {
  private readonly opts: LeaseOptions;
  /** `performance.now()` until which this control holds the lease; 0 when it does not. */
  private until = 0;
  private was = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private claiming: Promise<void> = Promise.resolve();
  private lastError: string | null = null;
  private readonly taken: (() => void)[] = [];

  constructor(opts: LeaseOptions) {
    this.opts = opts;
  }

  leading(): boolean {
    return performance.now() < this.until;
  }

  onTaken(listener: () => void): void {
    this.taken.push(listener);
  }

  async leader(): Promise<SettlerLeader | null> {
    const holder = await this.opts.cluster.leaseHolder();
    return holder === null ? null : { id: holder.id, url: holder.url ?? '' };
  }

  async start(): Promise<void> {
    await this.claim();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.claiming;
    this.until = 0;
    // Also when a claim in flight took the lease after stop() began: only this control's lease is released.
    await this.opts.cluster.releaseLease(this.opts.id).catch(() => undefined);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        void this.claim().then(() => this.schedule());
      },
      leaseTickMs(this.opts.cadenceMs, this.opts.leaseMs),
    );
    this.timer.unref();
  }

  private claim(): Promise<void> {
    const { cluster, id, leaseMs, log } = this.opts;
    this.claiming = (async () => {
      const sent = performance.now();
      try {
        const held = await cluster.claimLease(id, leaseMs);
        if (this.stopped) return;
        this.until = held ? sent + leaseMs : 0;
        this.lastError = null;
      } catch (err) {
        // The lease lapses by itself (`until`) if claims keep failing.
        const message = (err as Error).message ?? String(err);
        if (message !== this.lastError) log.warn('settler lease claim failed', { err });
        this.lastError = message;
      }
      const now = this.leading();
      if (now !== this.was)
        log.info(now ? 'settler lease taken: this control settles' : 'settler lease lost: another control settles', { control_id: id });
      const tookNow = now && !this.was;
      this.was = now;
      if (tookNow) for (const listener of this.taken) listener();
    })();
    return this.claiming;
  }
}
