// RateLimit headers of the gateway's limits, from token-bucket results on an injected clock.
import t from 'tap';
import { rateLimitHeaders } from '../../gateway/request/limiter';
import { TokenBuckets, type LimitPolicy } from '../../runtime/token-bucket';

const PER_MINUTE: LimitPolicy = { count: 60, windowSeconds: 60, burst: 10 };

t.test('RateLimit headers follow draft-ietf-httpapi-ratelimit-headers-11', async (t) => {
  const buckets = new TokenBuckets();
  const ok = buckets.take('k', PER_MINUTE, 0);
  t.same(rateLimitHeaders('key', PER_MINUTE, ok), {
    'ratelimit-policy': '"key";q=60;w=60;svc-burst=10',
    ratelimit: '"key";r=9;t=1',
  });
  for (let i = 0; i < 9; i++) buckets.take('k', PER_MINUTE, 0);
  const rejected = buckets.take('k', PER_MINUTE, 0);
  t.same(rateLimitHeaders('key', PER_MINUTE, rejected), {
    'ratelimit-policy': '"key";q=60;w=60;svc-burst=10',
    ratelimit: '"key";r=0;t=1',
    'retry-after': '1',
  });
  const slow: LimitPolicy = { count: 1, windowSeconds: 3600, burst: 1 };
  buckets.take('s', slow, 0);
  const h = rateLimitHeaders('ip', slow, buckets.take('s', slow, 1_000));
  t.equal(h['retry-after'], '3599');
  t.equal(h.ratelimit, '"ip";r=0;t=3599', 'Retry-After is not earlier than the end of the effective window');
});

t.test('policy names are serialised as structured-field strings', async (t) => {
  const r = { allowed: true, remaining: 1, resetSeconds: 1, retryAfterSeconds: 0 };
  t.equal(rateLimitHeaders('a"b\\c', PER_MINUTE, r).ratelimit, '"a\\"b\\\\c";r=1;t=1');
  t.equal(rateLimitHeaders('ü\n', PER_MINUTE, r).ratelimit, '"??";r=1;t=1');
});
