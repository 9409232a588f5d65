// Token buckets (runtime/token-bucket.ts: the gateway's per-key and per-address limits and
// control's per-address limits), on an injected clock.
import t from 'tap';
import { TokenBuckets, type LimitPolicy } from '../../runtime/token-bucket';

const PER_MINUTE: LimitPolicy = { count: 60, windowSeconds: 60, burst: 10 };

t.test('a full bucket allows burst calls, then rejects with Retry-After ≥ 1', async (t) => {
  const buckets = new TokenBuckets();
  const now = 1_000_000;
  for (let i = 0; i < 10; i++) {
    const r = buckets.take('key_a', PER_MINUTE, now);
    t.equal(r.allowed, true, `call ${i + 1}`);
    t.equal(r.remaining, 9 - i);
    t.equal(r.retryAfterSeconds, 0);
  }
  const rejected = buckets.take('key_a', PER_MINUTE, now);
  t.same(rejected, { allowed: false, remaining: 0, resetSeconds: 1, retryAfterSeconds: 1 });
});

t.test('refills at count/window per second, capped at burst', async (t) => {
  const buckets = new TokenBuckets();
  let now = 0;
  for (let i = 0; i < 10; i++) buckets.take('k', PER_MINUTE, now);
  t.equal(buckets.take('k', PER_MINUTE, now).allowed, false);
  now += 999;
  t.equal(buckets.take('k', PER_MINUTE, now).allowed, false, 'not yet one unit');
  now += 1;
  const one = buckets.take('k', PER_MINUTE, now);
  t.same([one.allowed, one.remaining], [true, 0], 'one unit after one second');
  now += 3_500;
  const r = buckets.take('k', PER_MINUTE, now);
  t.same([r.allowed, r.remaining], [true, 2], '3.5 units accrued, one taken');
  now += 3_600_000;
  t.equal(buckets.take('k', PER_MINUTE, now).remaining, 9, 'an hour later: full (10), one taken');
});

t.test('a slow policy reports Retry-After as whole seconds, rounded up', async (t) => {
  const buckets = new TokenBuckets();
  const slow: LimitPolicy = { count: 1, windowSeconds: 90, burst: 1 };
  t.equal(buckets.take('k', slow, 0).allowed, true);
  const r = buckets.take('k', slow, 10_000);
  t.equal(r.allowed, false);
  t.equal(r.retryAfterSeconds, 80);
  t.equal(r.resetSeconds, 80);
  t.equal(buckets.take('k', slow, 89_999).allowed, false);
  t.equal(buckets.take('k', slow, 90_000).allowed, true);
});

t.test('a fast policy never reports Retry-After below 1', async (t) => {
  const buckets = new TokenBuckets();
  const fast: LimitPolicy = { count: 1000, windowSeconds: 1, burst: 1 };
  buckets.take('k', fast, 0);
  const r = buckets.take('k', fast, 0);
  t.equal(r.allowed, false);
  t.equal(r.retryAfterSeconds, 1);
  const almost = buckets.take('k', fast, 0.9999999);
  t.equal(almost.allowed, false, 'a hair short of one unit');
  t.equal(almost.retryAfterSeconds, 1, 'still at least one second');
  t.equal(almost.resetSeconds, 1);
});

t.test('ids are independent', async (t) => {
  const buckets = new TokenBuckets();
  const one: LimitPolicy = { count: 1, windowSeconds: 60, burst: 1 };
  t.equal(buckets.take('a', one, 0).allowed, true);
  t.equal(buckets.take('a', one, 0).allowed, false);
  t.equal(buckets.take('b', one, 0).allowed, true);
  t.equal(buckets.take('ip:10.0.0.1', one, 0).allowed, true);
});

t.test('a lifted (larger) policy applies to an existing bucket', async (t) => {
  const buckets = new TokenBuckets();
  const tight: LimitPolicy = { count: 1, windowSeconds: 60, burst: 1 };
  buckets.take('k', tight, 0);
  t.equal(buckets.take('k', tight, 0).allowed, false);
  const lifted: LimitPolicy = { count: 600, windowSeconds: 60, burst: 100 };
  t.equal(buckets.take('k', lifted, 1_000).allowed, true, '10 units/s refill after the lift');
});

t.test('a changed share rescales the tokens a bucket holds, neither refilling nor emptying it', async (t) => {
  const buckets = new TokenBuckets();
  const whole: LimitPolicy = { count: 60, windowSeconds: 60, burst: 12 };
  const third: LimitPolicy = { count: 20, windowSeconds: 60, burst: 4, share: 1 / 3 };
  const half: LimitPolicy = { count: 30, windowSeconds: 60, burst: 6, share: 1 / 2 };
  // Under a third: 4 tokens, take 2 → 2 left (half full).
  buckets.take('k', third, 0);
  t.equal(buckets.take('k', third, 0).remaining, 2);
  // The share grows to a half: capacity 4 → 6, so the 2 tokens become 3 (still half full), one taken.
  t.equal(buckets.take('k', half, 0).remaining, 2, 'tokens scale by new/old capacity, not reset to the new burst');
  // Back to the whole limit (no share: 1): 2 of 6 → 4 of 12, one taken.
  t.equal(buckets.take('k', whole, 0).remaining, 3);
  // Down to a third: 3 of 12 → 1 of 4, one taken; the next is refused.
  t.equal(buckets.take('k', third, 0).remaining, 0, 'a shrinking share shrinks the tokens in proportion');
  t.equal(buckets.take('k', third, 0).allowed, false);
  // Refill follows the new rate: 20/min is one unit in 3 s.
  t.equal(buckets.take('k', third, 2_999).allowed, false);
  t.equal(buckets.take('k', third, 3_000).allowed, true);
  // A lift (another policy, same share) keeps its tokens as before: only a share change rescales.
  const lifted: LimitPolicy = { count: 600, windowSeconds: 60, burst: 40, share: 1 / 3 };
  t.equal(buckets.take('k', lifted, 3_000).allowed, false, 'no tokens minted by a lift');
});

t.test('a clock going backwards never mints units', async (t) => {
  const buckets = new TokenBuckets();
  const one: LimitPolicy = { count: 1, windowSeconds: 60, burst: 1 };
  buckets.take('k', one, 50_000);
  t.equal(buckets.take('k', one, 0).allowed, false);
});

t.test('memory stays bounded under a flood of distinct ids', async (t) => {
  const buckets = new TokenBuckets();
  const policy: LimitPolicy = { count: 60, windowSeconds: 60, burst: 10 };
  // 200,000 distinct ids at 10,000 takes per second: each bucket is full again 1 s later.
  let peak = 0;
  for (let i = 0; i < 200_000; i++) {
    buckets.take(`ip:${i}`, policy, i / 10);
    if (i % 1000 === 0) peak = Math.max(peak, buckets.size);
  }
  t.ok(peak < 50_000, `peak tracked ids ${peak} (about one second of traffic, not 200,000)`);
  buckets.sweep(1e12);
  t.equal(buckets.size, 0, 'a full sweep later drops every refilled bucket');
});

t.test('the hard cap evicts the oldest ids', async (t) => {
  const buckets = new TokenBuckets({ maxEntries: 100, sweepPerTake: 0 });
  const slow: LimitPolicy = { count: 1, windowSeconds: 86_400, burst: 1 };
  for (let i = 0; i < 1000; i++) buckets.take(`k${i}`, slow, 0);
  t.equal(buckets.size, 100);
  t.equal(buckets.take('k999', slow, 0).allowed, false, 'the newest id is still tracked');
  t.equal(buckets.take('k0', slow, 0).allowed, true, 'the oldest was evicted');
});

t.test('a bucket that refilled is dropped, and behaves as new', async (t) => {
  const buckets = new TokenBuckets();
  buckets.take('k', PER_MINUTE, 0);
  t.equal(buckets.size, 1);
  t.equal(buckets.sweep(999), 0, 'still below capacity');
  t.equal(buckets.sweep(1000), 1, 'full after one second');
  t.equal(buckets.size, 0);
  t.equal(buckets.take('k', PER_MINUTE, 1000).remaining, 9);
});

t.test('past the hard cap, full buckets are dropped before any other', async (t) => {
  const buckets = new TokenBuckets({ maxEntries: 3, sweepPerTake: 0 });
  const quick: LimitPolicy = { count: 2, windowSeconds: 1, burst: 2 };
  for (const id of ['a', 'b', 'c']) buckets.take(id, quick, 0);
  buckets.take('a', quick, 0);
  t.equal(buckets.take('a', quick, 0).allowed, false, 'a is out');
  t.equal(buckets.take('d', quick, 1_000).allowed, true, 'every bucket is full again when d comes');
  t.equal(buckets.size, 1, 'the full ones went, not just the oldest');
  for (const id of ['e', 'f', 'g']) buckets.take(id, quick, 1_000);
  t.equal(buckets.size, 3, 'none full: the oldest goes, the cap holds');
  t.equal(buckets.take('g', quick, 1_000).remaining, 0, 'the newest is still tracked (its second unit)');
});

// docs/cluster.md's "why a split limit admits a little under it" (Key limits hold across gateways):
// a bucket that holds one call drops the refill that accrues while it is full, so with calls
// arriving at random (Poisson, rate λ) a bucket refilling at r admits r·λ/(r + λ) per second; a
// bucket that holds two calls keeps that refill and admits r.
t.test('a bucket of one call admits r·λ/(r+λ) of random arrivals; a bucket of two admits r', async (t) => {
  let seed = 1;
  const random = (): number => {
    seed = (seed * 48_271) % 2_147_483_647;
    return seed / 2_147_483_647;
  };
  const admittedPerSecond = (policy: LimitPolicy, arrivalsPerSecond: number, seconds: number): number => {
    const buckets = new TokenBuckets();
    let admitted = 0;
    for (let now = 0; now < seconds * 1000;) {
      now += (-Math.log(1 - random()) * 1000) / arrivalsPerSecond;
      if (buckets.take('k', policy, now).allowed) admitted++;
    }
    return admitted / seconds;
  };
  // One of three gateways sharing a 10/s key whose burst (2) is below one call per gateway.
  const r = 10 / 3;
  const λ = 20;
  const one = admittedPerSecond({ count: r, windowSeconds: 1, burst: 2 / 3, share: 1 / 3 }, λ, 3_000);
  t.ok(
    Math.abs(one - (r * λ) / (r + λ)) < 0.05,
    `one-call bucket admits ${one.toFixed(3)}/s, r·λ/(r+λ) = ${((r * λ) / (r + λ)).toFixed(3)}`,
  );
  const two = admittedPerSecond({ count: r, windowSeconds: 1, burst: 2, share: 1 / 3 }, λ, 3_000);
  t.ok(Math.abs(two - r) < 0.05, `two-call bucket admits ${two.toFixed(3)}/s of r = ${r.toFixed(3)}`);
});
