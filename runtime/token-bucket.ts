/**
 * Token buckets: one implementation for every per-caller limit (the gateway's per-key and
 * per-address limits, docs/design.md §3.5; the public API's and the indexer's per-address limits,
 * docs/design.md §7). Each side formats its own answer (headers, problem+json) from a {@link TakeResult}.
 *
 * A bucket holds up to `burst` units and refills continuously at `count / windowSeconds`
 * units per second. A bucket that has refilled to full is indistinguishable from a missing
 * one, so it is dropped: memory holds only buckets that are currently below capacity.
 * Every `take` also inspects the next couple of entries in a round over the map and drops
 * those that are full, so memory tracks the set of recently active ids even under a flood of
 * distinct ids. Past the hard cap, the full buckets go first (a sweep over the map, at most
 * once per quarter of the cap of new ids), then the oldest ids.
 *
 * A policy may carry a `share` (the gateway's part of a key's cluster-wide limit, already
 * applied to `count` and `burst`). When a bucket's share changes, its tokens scale with it
 * (new / old capacity): a re-division neither refills a bucket to full nor empties it.
 */

/** A limit: `count` units per `windowSeconds`, at most `burst` at once. */
export interface LimitPolicy {
  count: number;
  windowSeconds: number;
  burst: number;
  /**
   * The fraction of a cluster-wide limit that `count` and `burst` already are (limit shares);
   * absent for limits that are not divided (1).
   */
  share?: number;
}

/** What one `take` decided. */
export interface TakeResult {
  allowed: boolean;
  /** Whole units left after this call. */
  remaining: number;
  /**
   * Seconds until the bucket gains its next unit (draft-11 "effective window" `t`: within it
   * the caller can use no more than `remaining`). Integer ≥ 1.
   */
  resetSeconds: number;
  /** Seconds to wait before a retry can succeed: integer ≥ 1 when rejected, 0 when allowed. */
  retryAfterSeconds: number;
}

export interface TokenBucketsOptions {
  /**
   * Hard cap on tracked ids. Past it, full buckets are dropped first, then the oldest entries
   * even if not full (those callers get a fresh bucket). @default 1_000_000
   */
  maxEntries?: number;
  /** Entries inspected for eviction per `take`. @default 2 */
  sweepPerTake?: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
  /** When the bucket will be full again at its last policy's rate. */
  fullAtMs: number;
  /** The share of the policy it was last taken under. */
  share: number;
}

export const DEFAULT_MAX_BUCKETS = 1_000_000;

/** In-memory token buckets keyed by caller id (a key id, or `ip:<address>`). */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  /** Where the incremental sweep continues (a live iterator: it sees ids added later). */
  private hand: Iterator<string> = this.buckets.keys();
  private readonly maxEntries: number;
  private readonly sweepPerTake: number;
  /** New ids since the last full sweep past the cap (the first time past it always sweeps). */
  private addedSinceSweep = Infinity;

  constructor(options: TokenBucketsOptions = {}) {
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_BUCKETS;
    this.sweepPerTake = options.sweepPerTake ?? 2;
  }

  /** Ids currently tracked (buckets below capacity). */
  get size(): number {
    return this.buckets.size;
  }

  /** Take one unit from `id`'s bucket at time `nowMs` (monotonic milliseconds). */
  take(id: string, policy: LimitPolicy, nowMs: number): TakeResult {
    const rate = policy.count / policy.windowSeconds; // units per second
    const burst = Math.max(1, policy.burst);
    const share = policy.share ?? 1;
    const bucket = this.buckets.get(id);
    let tokens: number;
    if (bucket === undefined) {
      tokens = burst;
    } else {
      const elapsedS = Math.max(0, nowMs - bucket.updatedMs) / 1000;
      // The share changed since the last take: the tokens it held scale with the capacity.
      const held = bucket.share === share ? bucket.tokens : (bucket.tokens * share) / bucket.share;
      tokens = Math.min(burst, held + elapsedS * rate);
    }

    const allowed = tokens >= 1;
    if (allowed) tokens -= 1;

    // tokens < burst here (a take only happens at or below capacity), so remember the bucket.
    const fullAtMs = nowMs + ((burst - tokens) / rate) * 1000;
    if (bucket === undefined) {
      this.buckets.set(id, { tokens, updatedMs: nowMs, fullAtMs, share });
      this.addedSinceSweep++;
      if (this.buckets.size > this.maxEntries) this.overflow(id, nowMs);
    } else {
      bucket.tokens = tokens;
      bucket.updatedMs = nowMs;
      bucket.fullAtMs = fullAtMs;
      bucket.share = share;
    }
    this.sweepSome(nowMs);

    // Time until the next unit arrives, from the fractional progress towards it.
    const toNextUnitS = (1 - (tokens - Math.floor(tokens))) / rate;
    const resetSeconds = Math.max(1, Math.ceil(toNextUnitS - 1e-9));
    return {
      allowed,
      remaining: Math.floor(tokens),
      resetSeconds,
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / rate - 1e-9)),
    };
  }

  /** Drop every bucket that is full at `nowMs`. O(n); `take` already does this incrementally. */
  sweep(nowMs: number): number {
    let dropped = 0;
    for (const [id, bucket] of this.buckets) {
      if (bucket.fullAtMs <= nowMs) {
        this.buckets.delete(id);
        dropped++;
      }
    }
    return dropped;
  }

  /** Forget every bucket (e.g. when limits are reconfigured wholesale). */
  clear(): void {
    this.buckets.clear();
    this.hand = this.buckets.keys();
  }

  // A clock hand over the map: each take inspects the next few ids, drops the full ones and
  // wraps around at the end, so over n takes every entry is inspected about sweepPerTake times.
  private sweepSome(nowMs: number): void {
    for (let n = 0; n < this.sweepPerTake; n++) {
      let next = this.hand.next();
      if (next.done === true) {
        this.hand = this.buckets.keys();
        next = this.hand.next();
        if (next.done === true) return;
      }
      const id = next.value;
      if (this.buckets.get(id)!.fullAtMs <= nowMs) this.buckets.delete(id);
    }
  }

  // Past the cap: drop the full buckets (an O(n) sweep, so at most once per quarter of the cap
  // of new ids), then, if still past it, the oldest ids.
  private overflow(keep: string, nowMs: number): void {
    if (this.addedSinceSweep >= Math.max(1, Math.floor(this.maxEntries / 4))) {
      this.addedSinceSweep = 0;
      this.sweep(nowMs);
    }
    if (this.buckets.size > this.maxEntries) this.evictOldest(keep);
  }

  private evictOldest(keep: string): void {
    for (const id of this.buckets.keys()) {
      if (id === keep) continue;
      this.buckets.delete(id);
      if (this.buckets.size <= this.maxEntries) return;
    }
  }
}
