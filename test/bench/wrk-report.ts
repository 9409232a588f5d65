/**
 * `npm run bench:workers` reads wrk's report as text (`bench/lib/wrk.js`): the request count, the
 * latency percentiles in wrk's units, failed responses and socket errors. A report misread would
 * divide CPU time by the wrong count, so the parser is held to real reports here, and the Lua
 * script it writes to the request it describes.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '../fixtures/imports';

interface WrkLib {
  parse(out: string): {
    requests: number;
    p50_ms: number | null;
    p90_ms: number | null;
    p99_ms: number | null;
    non2xx: number;
    errors: number;
    timeouts: number;
  };
  script(run: { headers: Record<string, string>; body: string; thinkMs: number }): string;
}
const wrk = createRequire(__filename)(join(ROOT, 'bench', 'lib', 'wrk.js')) as WrkLib;

const SATURATED = `Running 10s test @ http://127.0.0.1:40673/v1/ep/x
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.21ms    1.02ms  21.40ms   80.12%
    Req/Sec    14.37k   612.20    15.40k    71.00%
  Latency Distribution
     50%    3.10ms
     75%    3.60ms
     90%    4.20ms
     99%    6.95ms
  143015 requests in 10.00s, 48.21MB read
Requests/sec:  14301.50
Transfer/sec:      4.82MB
`;

const TROUBLED = `Running 10s test @ http://127.0.0.1:37971/x
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   850.00us  232.42us    1.02s    71.48%
    Req/Sec     2.81k   101.12     3.01k    68.00%
  Latency Distribution
     50%  449.00us
     75%  600.00us
     90%  767.00us
     99%    1.02s
  28092 requests in 10.00s, 9.31MB read
  Socket errors: connect 1, read 2, write 3, timeout 4
  Non-2xx or 3xx responses: 17
Requests/sec:   2809.20
Transfer/sec:    953.10KB
`;

t.test('a clean saturated report: its count and percentiles in milliseconds, nothing failed', async (t) => {
  t.same(wrk.parse(SATURATED), { requests: 143015, p50_ms: 3.1, p90_ms: 4.2, p99_ms: 6.95, non2xx: 0, errors: 0, timeouts: 0 });
});

t.test('microseconds and seconds are converted; failed answers and socket errors are counted apart', async (t) => {
  t.same(wrk.parse(TROUBLED), { requests: 28092, p50_ms: 0.449, p90_ms: 0.767, p99_ms: 1020, non2xx: 17, errors: 6, timeouts: 4 });
});

t.test('a report without a request count is an error, not zero requests', async (t) => {
  t.throws(() => wrk.parse('unable to connect to 127.0.0.1:1 Connection refused\n'), /no request count/);
});

t.test('the script sends the POST it is given, and waits only when a think time is set', async (t) => {
  const body = '{"pad":"aaaa"}';
  const steady = wrk.script({ headers: { authorization: 'Bearer svc_test_abc' }, body, thinkMs: 5 });
  t.match(steady, /^wrk\.method = "POST"$/m);
  t.match(steady, /^wrk\.body = \[==\[\{"pad":"aaaa"\}\]==\]$/m);
  // A space after `[`: `[[` would open a Lua long string.
  t.match(steady, /^wrk\.headers\[ \[==\[authorization\]==\] \] = \[==\[Bearer svc_test_abc\]==\]$/m);
  t.match(steady, /^function delay\(\) return 5 end$/m);
  t.notMatch(wrk.script({ headers: {}, body, thinkMs: 0 }), /delay/);
  t.throws(() => wrk.script({ headers: {}, body: 'x]==]y', thinkMs: 0 }), /\]==\]/);
});
