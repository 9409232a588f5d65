/**
 * Per-client-IP token buckets for the public read API and the indexer (DESIGN §7: generous).
 * A bucket holds `count` units and refills continuously at `count / windowS` per second; an
 * exhausted bucket answers 429 `svc_rate_limited` with `Retry-After`, `RateLimit-Policy` and
 * `RateLimit` (IETF draft 11). Admitted answers carry no limit headers: the limit is generous,
 * and setting headers ahead of `writeHead` would put every cached answer on Node's slow
 * header path (measured: ~4 µs a request). Buckets that have refilled completely are forgotten, so memory
 * follows the set of recently active addresses, with a hard cap on top.
 *
 * (control never imports gateway/: this is control's own small copy of the idea.)
 *
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/11/
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientAddress } from '../../protocol/client-address';
import { sendProblem } from '../../protocol/http';

export interface IpLimit {
  count: number;
  windowS: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
  fullAtMs: number;
}

/** Most addresses tracked at once; past it the oldest are dropped. @default 100000 */
export const DEFAULT_MAX_TRACKED_IPS = 100_000;

export interface Decision {
  allowed: boolean;
  remaining: number;
  /** Seconds until a refused caller may retry (≥ 1), or until the next unit (allowed). */
  seconds: number;
}

export class IpRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly limit: IpLimit;
  private readonly now: () => number;
  private readonly trustedProxyHops: number;
  private readonly maxTracked: number;
  private readonly policyName: string;
  private readonly policyHeader: string;

  constructor(options: { limit: IpLimit; now: () => number; trustedProxyHops?: number; maxTracked?: number; name?: string }) {
    this.limit = options.limit;
    this.now = options.now;
    this.trustedProxyHops = options.trustedProxyHops ?? 0;
    this.maxTracked = options.maxTracked ?? DEFAULT_MAX_TRACKED_IPS;
    this.policyName = `"${options.name ?? 'ip'}"`;
    this.policyHeader = `${this.policyName};q=${options.limit.count};w=${options.limit.windowS}`;
  }

  get tracked(): number {
    return this.buckets.size;
  }

  /** Take one unit for `ip`. */
  take(ip: string): Decision {
    const now = this.now();
    const rate = this.limit.count / this.limit.windowS; // per second
    const capacity = this.limit.count;
    const bucket = this.buckets.get(ip);
    let tokens = bucket === undefined ? capacity : Math.min(capacity, bucket.tokens + (Math.max(0, now - bucket.updatedMs) / 1000) * rate);
    const allowed = tokens >= 1;
    if (allowed) tokens -= 1;
    const fullAtMs = now + ((capacity - tokens) / rate) * 1000;
    if (bucket === undefined) {
      this.buckets.set(ip, { tokens, updatedMs: now, fullAtMs });
      if (this.buckets.size > this.maxTracked) this.evict(now);
    } else {
      bucket.tokens = tokens;
      bucket.updatedMs = now;
      bucket.fullAtMs = fullAtMs;
    }
    const seconds = allowed
      ? Math.max(1, Math.ceil((1 - (tokens - Math.floor(tokens))) / rate - 1e-9))
      : Math.max(1, Math.ceil((1 - tokens) / rate - 1e-9));
    return { allowed, remaining: Math.floor(tokens), seconds };
  }

  /** Admit `req`, or answer it with 429 and return false. */
  admit(req: IncomingMessage, res: ServerResponse): boolean {
    const decision = this.take(clientAddress(req, this.trustedProxyHops));
    if (decision.allowed) return true;
    req.resume();
    sendProblem(res, 'svc_rate_limited', `too many requests from this address; retry after ${decision.seconds} s`, {
      'ratelimit-policy': this.policyHeader,
      ratelimit: `${this.policyName};r=${decision.remaining};t=${decision.seconds}`,
      'retry-after': String(decision.seconds),
    });
    return false;
  }

  // Drop full buckets; if none is full, drop the oldest quarter (they get a fresh bucket).
  private evict(now: number): void {
    for (const [ip, b] of this.buckets) if (b.fullAtMs <= now) this.buckets.delete(ip);
    if (this.buckets.size <= this.maxTracked) return;
    let drop = Math.ceil(this.buckets.size / 4);
    for (const ip of this.buckets.keys()) {
      if (drop-- <= 0) break;
      this.buckets.delete(ip);
    }
  }
}
