/**
 * Per-client-IP token buckets for the public read API and the indexer (docs/design.md §7: generous).
 * A bucket holds `count` units and refills continuously at `count / windowS` per second; an
 * exhausted bucket answers 429 `svc_rate_limited` with `Retry-After`, `RateLimit-Policy` and
 * `RateLimit` (IETF draft 11). Admitted answers carry no limit headers: the limit is generous,
 * and setting headers ahead of `writeHead` would put every cached answer on Node's slow
 * header path (measured: ~4 µs a request). The buckets are `runtime/token-bucket.ts`, the
 * gateway's too: those that have refilled completely are forgotten, so memory follows the set
 * of recently active addresses, with a hard cap on top.
 *
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/11/
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../../config/load';
import { clientAddress } from '../../runtime/client-address';
import { sendProblem } from '../../runtime/http';
import { TokenBuckets, type LimitPolicy } from '../../runtime/token-bucket';

export interface IpLimit {
  count: number;
  windowS: number;
}

/** Most addresses tracked at once; past it full buckets, then the oldest, are dropped. @default 100000 */
export const DEFAULT_MAX_TRACKED_IPS = 100_000;

export interface Decision {
  allowed: boolean;
  remaining: number;
  /** Seconds until a refused caller may retry (≥ 1), or until the next unit (allowed). */
  seconds: number;
}

export class IpRateLimiter {
  private readonly buckets: TokenBuckets;
  private readonly policy: LimitPolicy;
  private readonly now: () => number;
  private readonly trustedProxyHops: number;
  private readonly policyName: string;
  private readonly policyHeader: string;

  constructor(options: { limit: IpLimit; now: () => number; trustedProxyHops?: number; maxTracked?: number; name?: string }) {
    // The bucket holds a whole window's count: the limit is generous, bursts are welcome.
    this.policy = { count: options.limit.count, windowSeconds: options.limit.windowS, burst: options.limit.count };
    this.buckets = new TokenBuckets({ maxEntries: options.maxTracked ?? DEFAULT_MAX_TRACKED_IPS });
    this.now = options.now;
    this.trustedProxyHops = options.trustedProxyHops ?? 0;
    this.policyName = `"${options.name ?? 'ip'}"`;
    this.policyHeader = `${this.policyName};q=${options.limit.count};w=${options.limit.windowS}`;
  }

  get tracked(): number {
    return this.buckets.size;
  }

  /** Take one unit for `ip`. */
  take(ip: string): Decision {
    const taken = this.buckets.take(ip, this.policy, this.now());
    return { allowed: taken.allowed, remaining: taken.remaining, seconds: taken.allowed ? taken.resetSeconds : taken.retryAfterSeconds };
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
}

/** A per-client-IP limiter with the `limits.public*` policy (shared by the public API and the indexer). */
export function publicIpLimiter(config: Readonly<Config>, now: () => number): IpRateLimiter {
  return new IpRateLimiter({
    limit: { count: config.limits.publicCount, windowS: config.limits.publicWindowS },
    now,
    trustedProxyHops: config.public.trustedProxyHops,
  });
}
