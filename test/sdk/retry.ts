/**
 * svc-monitor-sdk's retry decisions, driven through `SvcClient.call()` with an injected
 * `fetch` that plays scripted answers and a fake clock that records every wait instead of
 * sleeping: which answers are retried (gateway 429 and 503 refusals, connections never made),
 * which never are without `retry.unsafe` (502, 504, a connection lost after sending), how long
 * each wait is (`Retry-After`, the `RateLimit` reset, backoff, jitter), and that retries stop
 * at `retry.max` and before `timeoutMs`. Runs the built package (`npm run build` first).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { join } from 'node:path';
import { SvcClient, SvcError, parseRateLimitReset, parseRetryAfter, type Clock, type SvcClientOptions } from 'svc-monitor-sdk';
import { rejection } from '../fixtures/rejection';

const GW = 'http://gateway.test';
const KEY = 'svc_beta_4nUo8FzQ2kEo7mYbq3Vt9XwP6cRs1LdJhGaKe5NfTu';
const START = Date.UTC(2026, 0, 1);
const SDK_PACKAGE = JSON.parse(readFileSync(join(__dirname, '..', '..', 'sdk', 'package.json'), 'utf8')) as { version: string };

interface FakeClock extends Clock {
  waits: number[];
}

/** Time moves only when the SDK sleeps; every wait is recorded. */
function fakeClock(): FakeClock {
  let now = START;
  const waits: number[] = [];
  return {
    waits,
    now: () => now,
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw signal.reason;
      waits.push(ms);
      now += ms;
    },
  };
}

type Answer = (() => Response) | Error;

interface Sent {
  url: string;
  method: string;
  headers: Headers;
  body: string | null;
}

/** A fetch that answers from `answers`, in order, and records what was sent. */
function scripted(answers: Answer[]): { fetch: SvcClientOptions['fetch']; sent: Sent[] } {
  const sent: Sent[] = [];
  return {
    sent,
    fetch: async (url, init) => {
      sent.push({
        url,
        method: init.method ?? 'GET',
        headers: new Headers(init.headers),
        body: typeof init.body === 'string' ? init.body : null,
      });
      const next = answers.shift();
      if (next === undefined) throw new Error('test fetch: no answer left');
      if (next instanceof Error) throw next;
      return next();
    },
  };
}

function problem(status: number, code: string, headers: Record<string, string> = {}): () => Response {
  return () =>
    new Response(JSON.stringify({ type: `https://svc.dev/errors#${code}`, title: code, status, detail: `detail of ${code}`, code }), {
      status,
      headers: { 'content-type': 'application/problem+json', ...headers },
    });
}

const CALL_ID = '01890a5d-ac96-774b-bcce-b302099a8057';

function upstream(status: number, body: unknown = { ok: true }, headers: Record<string, string> = {}): () => Response {
  return () =>
    new Response(JSON.stringify(body), {
      status,
      headers: {
        'content-type': 'application/json',
        'x-svc-call-id': CALL_ID,
        'x-svc-outcome': status >= 500 ? 'server_error' : status >= 400 ? 'client_error' : 'ok',
        'x-svc-latency-ms': '12',
        'x-svc-refund': status >= 500 ? '2100' : '0',
        'x-svc-premium': status < 400 ? '100' : '0',
        'x-svc-coverage': 'covered',
        ...headers,
      },
    });
}

/** `fetch failed` as undici reports a network error, with the system error code as cause. */
function networkError(code: string): TypeError {
  return new TypeError('fetch failed', { cause: Object.assign(new Error(`connect ${code}`), { code }) });
}

function client(answers: Answer[], options: Partial<SvcClientOptions> = {}) {
  const clock = fakeClock();
  const { fetch, sent } = scripted(answers);
  const svc = new SvcClient({ gatewayUrl: GW, key: KEY, fetch, clock, random: () => 0.5, ...options });
  return { svc, sent, clock };
}

t.test('the request: URL, method, User-Agent from package.json, bearer key, JSON body', async (t) => {
  const { svc, sent } = client([upstream(200)]);
  const res = await svc.call('weather', '/forecast?city=Oslo', {
    body: { days: 3 },
    headers: { 'x-trace': 'abc', 'user-agent': 'curl/8' },
  });
  t.equal(sent.length, 1);
  const req = sent[0]!;
  t.equal(req.url, `${GW}/v1/weather/forecast?city=Oslo`);
  t.equal(req.method, 'POST', 'POST by default');
  t.equal(req.headers.get('user-agent'), `svc-monitor-sdk/${SDK_PACKAGE.version}`, 'User-Agent names the package version');
  t.equal(req.headers.get('authorization'), `Bearer ${KEY}`);
  t.equal(req.headers.get('content-type'), 'application/json');
  t.equal(req.headers.get('x-trace'), 'abc', 'caller headers are sent');
  t.equal(req.body, '{"days":3}');
  t.equal(res.status, 200);
  t.same(res.body, { ok: true });
  t.equal(res.callId, CALL_ID);
  t.equal(res.outcome, 'ok');
  t.equal(res.premium, 100);
  t.equal(res.refund, 0);
  t.equal(res.latencyMs, 12);
  t.equal(res.coverage, 'covered');
  t.equal(res.headers['x-svc-call-id'], CALL_ID, 'headers are a plain record');
});

t.test('x-svc fields are null when the gateway did not send them; text and bytes bodies', async (t) => {
  const { svc } = client([
    () => new Response('plain words', { status: 200, headers: { 'content-type': 'text/plain' } }),
    () => new Response(new Uint8Array([1, 2, 3]), { status: 200, headers: { 'content-type': 'application/octet-stream' } }),
    () => new Response(null, { status: 204 }),
  ]);
  const text = await svc.call('ep', 'x');
  t.same(
    {
      callId: text.callId,
      outcome: text.outcome,
      coverage: text.coverage,
      refund: text.refund,
      premium: text.premium,
      latencyMs: text.latencyMs,
    },
    { callId: null, outcome: null, coverage: null, refund: null, premium: null, latencyMs: null },
  );
  t.equal(text.body, 'plain words');
  const bytes = await svc.call('ep', 'x');
  t.same(Array.from(bytes.body as Uint8Array), [1, 2, 3]);
  t.equal((await svc.call('ep', 'x')).body, null, 'an empty body is null');
});

t.test('a path that would leave the endpoint is refused before sending', async (t) => {
  const { svc, sent } = client([upstream(200)]);
  await t.rejects(svc.call('ep', '../other/x'), { name: 'SvcError', code: 'svc_sdk_config' });
  await t.rejects(svc.call('Not An Id', 'x'), { name: 'SvcError', code: 'svc_sdk_config' });
  t.equal(sent.length, 0);
});

t.test('429 svc_rate_limited is retried after Retry-After plus jitter', async (t) => {
  const { svc, sent, clock } = client([
    problem(429, 'svc_rate_limited', { 'retry-after': '2', ratelimit: '"key";r=0;t=2' }),
    upstream(200),
  ]);
  const res = await svc.call('ep', 'x', { body: 'once' });
  t.equal(res.status, 200, 'the retry succeeded');
  t.equal(sent.length, 2, 'two requests');
  t.equal(sent[1]!.body, 'once', 'the retry sends the same body');
  t.same(clock.waits, [2000 * (1 + 0.25 * 0.5)], 'waited Retry-After × (1 + jitter × random)');
});

t.test('the wait is never shorter than the server asked, whatever the jitter draws', async (t) => {
  for (const draw of [0, 0.999]) {
    const { svc, clock } = client([problem(429, 'svc_rate_limited', { 'retry-after': '3' }), upstream(200)], { random: () => draw });
    await svc.call('ep', 'x');
    t.ok(clock.waits[0]! >= 3000 && clock.waits[0]! <= 3000 * 1.25, `random ${draw}: waited ${clock.waits[0]} ms, within [3000, 3750]`);
  }
});

t.test('the RateLimit reset counts when it is later than Retry-After', async (t) => {
  const { svc, clock } = client(
    [problem(429, 'svc_rate_limited', { 'retry-after': '1', ratelimit: '"ip";r=4;t=9, "key";r=0;t=3' }), upstream(200)],
    {
      random: () => 0,
    },
  );
  await svc.call('ep', 'x');
  t.same(clock.waits, [3000], 'waited for the exhausted "key" quota (t=3), not the other one');
});

t.test('503 svc_maintenance and svc_gateway_not_ready are retried', async (t) => {
  const { svc, sent, clock } = client(
    [problem(503, 'svc_maintenance', { 'retry-after': '5' }), problem(503, 'svc_gateway_not_ready', { 'retry-after': '1' }), upstream(200)],
    { random: () => 0 },
  );
  const res = await svc.call('ep', 'x');
  t.equal(res.status, 200);
  t.equal(sent.length, 3);
  t.same(clock.waits, [5000, 1000]);
});

t.test('retries stop at retry.max; the last refusal is the error', async (t) => {
  const refusals = Array.from({ length: 5 }, () => problem(429, 'svc_rate_limited', { 'retry-after': '1' }));
  const { svc, sent, clock } = client(refusals, { retry: { max: 2 } });
  const err = await rejection(svc.call('ep', 'x'));
  t.type(err, SvcError);
  t.equal((err as SvcError).code, 'svc_rate_limited');
  t.equal((err as SvcError).status, 429);
  t.equal((err as SvcError).attempts, 3, 'first attempt + 2 retries');
  t.equal(sent.length, 3);
  t.equal(clock.waits.length, 2);

  const defaults = client(Array.from({ length: 6 }, () => problem(429, 'svc_rate_limited', { 'retry-after': '1' })));
  await t.rejects(defaults.svc.call('ep', 'x'), { code: 'svc_rate_limited' });
  t.equal(defaults.sent.length, 4, 'retry.max defaults to 3');

  const off = client([problem(429, 'svc_rate_limited', { 'retry-after': '1' }), upstream(200)], { retry: { max: 0 } });
  await t.rejects(off.svc.call('ep', 'x'), { code: 'svc_rate_limited' });
  t.equal(off.sent.length, 1, 'max 0: no retry');
});

t.test('no retry whose wait would end past timeoutMs', async (t) => {
  const refusals = () => Array.from({ length: 5 }, () => problem(429, 'svc_rate_limited', { 'retry-after': '2' }));
  const short = client(refusals(), { random: () => 0 });
  await t.rejects(short.svc.call('ep', 'x', { timeoutMs: 1500 }), { code: 'svc_rate_limited' });
  t.equal(short.sent.length, 1, 'a 2 s wait does not fit in 1.5 s: no retry');
  t.same(short.clock.waits, []);

  const longer = client(refusals(), { random: () => 0 });
  await t.rejects(longer.svc.call('ep', 'x', { timeoutMs: 5000 }), { code: 'svc_rate_limited' });
  t.equal(longer.sent.length, 3, 'waits at 0 → 2 s → 4 s fit in 5 s; the third would end at 6 s');
  t.same(longer.clock.waits, [2000, 2000]);
});

t.test('a wait longer than retry.maxDelayMs is not retried', async (t) => {
  const { svc, sent } = client([problem(503, 'svc_maintenance', { 'retry-after': '600' }), upstream(200)]);
  await t.rejects(svc.call('ep', 'x'), { code: 'svc_maintenance', status: 503 });
  t.equal(sent.length, 1);
});

t.test('502 and 504 are never retried by default: the upstream may have acted', async (t) => {
  for (const [status, code] of [
    [502, 'svc_upstream_unavailable'],
    [504, 'svc_upstream_timeout'],
  ] as const) {
    const { svc, sent } = client([
      problem(status, code, { 'x-svc-call-id': CALL_ID, 'x-svc-outcome': 'network_error', 'x-svc-refund': '2100' }),
      upstream(200),
    ]);
    const err = await rejection(svc.call('ep', 'x'));
    t.type(err, SvcError);
    t.match(err, { status, code, callId: CALL_ID, attempts: 1 }, `${status}: SvcError with the call id`);
    t.equal(sent.length, 1, `${status}: one request`);
  }
});

t.test('retry.unsafe retries 502/504 with exponential backoff', async (t) => {
  const { svc, sent, clock } = client(
    [
      problem(502, 'svc_upstream_unavailable', { 'x-svc-call-id': CALL_ID }),
      problem(504, 'svc_upstream_timeout', { 'x-svc-call-id': CALL_ID }),
      upstream(200),
    ],
    { retry: { unsafe: true, baseDelayMs: 100 }, random: () => 0 },
  );
  const res = await svc.call('ep', 'x');
  t.equal(res.status, 200);
  t.equal(sent.length, 3);
  t.same(clock.waits, [100, 200], 'base × 2^retry');
});

t.test('network errors: never connected is retried; lost after sending is not (unless unsafe)', async (t) => {
  const refused = client([networkError('ECONNREFUSED'), upstream(200)], { random: () => 0 });
  t.equal((await refused.svc.call('ep', 'x')).status, 200, 'ECONNREFUSED: retried');
  t.same(refused.clock.waits, [250], 'backoff from the default base');

  const reset = client([networkError('ECONNRESET'), upstream(200)]);
  const err = await rejection(reset.svc.call('ep', 'x'));
  t.type(err, SvcError, 'the network error is thrown as an SvcError');
  t.equal((err as SvcError).code, 'svc_sdk_network');
  t.equal((err as { cause?: { code?: string } }).cause?.code, 'ECONNRESET', 'its cause is the system error');
  t.equal(reset.sent.length, 1, 'ECONNRESET on POST: not retried');

  const unsafe = client([networkError('ECONNRESET'), upstream(200)], { retry: { unsafe: true } });
  t.equal((await unsafe.svc.call('ep', 'x')).status, 200, 'unsafe: retried');
  t.equal(unsafe.sent.length, 2);

  const get = client([networkError('ECONNRESET'), upstream(200)]);
  t.equal((await get.svc.call('ep', 'x', { method: 'GET' })).status, 200, 'GET is idempotent: retried');
  t.equal(get.sent.length, 2);
});

t.test("the upstream's own 429 and 503 are its answers: resolved, not retried", async (t) => {
  const { svc, sent } = client([
    upstream(429, { slow: 'down' }, { 'retry-after': '1' }),
    upstream(503, { down: true }, { 'retry-after': '1' }),
  ]);
  const a = await svc.call('ep', 'x');
  t.equal(a.status, 429);
  t.equal(a.outcome, 'client_error');
  t.same(a.body, { slow: 'down' });
  const b = await svc.call('ep', 'x');
  t.equal(b.status, 503);
  t.equal(b.refund, 2100);
  t.equal(sent.length, 2, 'one request each');
});

t.test('other gateway errors reject at once with the catalogue fields', async (t) => {
  const { svc, sent } = client([problem(403, 'svc_auth_not_in_beta')]);
  const err = await rejection(svc.call('ep', 'x'));
  t.type(err, SvcError);
  t.match(err, {
    status: 403,
    code: 'svc_auth_not_in_beta',
    title: 'svc_auth_not_in_beta',
    detail: 'detail of svc_auth_not_in_beta',
    callId: null,
  });
  t.notMatch((err as Error).message, KEY, 'the key is not in the message');
  t.equal(sent.length, 1);
});

t.test('timeoutMs aborts a request in flight with svc_sdk_timeout', async (t) => {
  const svc = new SvcClient({
    gatewayUrl: GW,
    fetch: (_url, init) =>
      new Promise((_resolve, reject) => {
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a fake fetch rejects with the signal's reason, as fetch does
        init.signal!.addEventListener('abort', () => reject(init.signal!.reason));
      }),
  });
  const err = await rejection(svc.call('ep', 'x', { timeoutMs: 30 }));
  t.type(err, SvcError);
  t.match(err, { code: 'svc_sdk_timeout', attempts: 1 });
});

t.test("the caller's signal stops a retry wait", async (t) => {
  const controller = new AbortController();
  let fetches = 0;
  const svc = new SvcClient({
    gatewayUrl: GW,
    fetch: async () => {
      fetches++;
      setImmediate(() => controller.abort(new Error('caller gave up')));
      return problem(429, 'svc_rate_limited', { 'retry-after': '30' })();
    },
  });
  await t.rejects(svc.call('ep', 'x', { signal: controller.signal }), { message: 'caller gave up' });
  t.equal(fetches, 1, 'no request after the abort');
});

t.test('a malformed key is refused without being echoed', async (t) => {
  const bad = `${KEY}\n`;
  const err = await rejection(Promise.resolve().then(() => new SvcClient({ gatewayUrl: GW, key: bad })));
  t.match(err, { name: 'SvcError', code: 'svc_sdk_config' });
  t.notMatch((err as Error).message, KEY);
  t.notMatch(inspect(new SvcClient({ gatewayUrl: GW, key: KEY })), KEY, 'inspecting a client does not show the key');
  t.notMatch(JSON.stringify(new SvcClient({ gatewayUrl: GW, key: KEY })), KEY, 'nor does JSON.stringify');
});

t.test('Retry-After and RateLimit parsing', async (t) => {
  t.equal(parseRetryAfter('3', START), 3000);
  t.equal(parseRetryAfter(new Date(START + 7000).toUTCString(), START), 7000, 'HTTP-date');
  t.equal(parseRetryAfter('soon', START), null);
  t.equal(parseRetryAfter(null, START), null);
  t.equal(parseRateLimitReset('"key";r=0;t=3'), 3000);
  t.equal(parseRateLimitReset('"key";r=2;t=3'), null, 'nothing exhausted');
  t.equal(parseRateLimitReset('"a,b";r=0;t=4, "key";r=0;t=2'), 4000, 'largest exhausted reset; commas in names');
  t.equal(parseRateLimitReset('garbage'), null);
});

t.test('402 svc_payment_required: not retried; the error says what the call needs and what the account holds here', async (t) => {
  const body = {
    type: 'https://svc.dev/errors#svc_payment_required',
    title: 'Payment required',
    status: 402,
    detail: 'account acc_x: this gateway holds 120 of its money, this call needs 500; deposit, then retry',
    code: 'svc_payment_required',
    required: 500,
    available: 120,
    account_id: 'acc_x',
  };
  const refusal = () =>
    new Response(JSON.stringify(body), {
      status: 402,
      headers: { 'content-type': 'application/problem+json', link: '</api/v1/account>; rel="account"' },
    });
  const { svc, sent } = client([refusal, upstream(200)]);
  const err = (await rejection(svc.call('weather', '/forecast'))) as SvcError;
  t.ok(err instanceof SvcError);
  t.equal(sent.length, 1, 'one request: a refusal for payment is final');
  t.equal(err.code, 'svc_payment_required');
  t.equal(err.status, 402);
  t.equal(err.required, 500);
  t.equal(err.available, 120);
  t.equal(err.accountId, 'acc_x');
  t.equal(err.headers.link, '</api/v1/account>; rel="account"');
  const other = (await rejection(client([problem(400, 'svc_bad_request')]).svc.call('weather', '/x'))) as SvcError;
  t.equal(other.required, undefined, 'other errors carry none of them');
});
