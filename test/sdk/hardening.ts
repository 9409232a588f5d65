/**
 * svc-monitor-sdk never hangs and never lets a failure out as anything but an `SvcError` with a
 * code: a default deadline on every request (60 s for calls, 30 s for reads, `timeoutMs` per
 * client and per request, 0 for none; the deadline's timer comes from an injected clock, so
 * nothing waits), a cap on the decoded size of an answer (read as a stream and cancelled past
 * it), refusal of malformed `X-Svc-*` headers, network failures with their cause, configuration
 * mistakes, and no amounts from a refund proof that did not verify. Against real local HTTP
 * servers where the transport matters. Runs the built package (`npm run build` first).
 */
import t from 'tap';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import {
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_READ_TIMEOUT_MS,
  SvcClient,
  SvcError,
  type Clock,
  type FetchLike,
  type SvcClientOptions,
} from 'svc-monitor-sdk';
import { rejection } from '../fixtures/rejection';
import { waitFor } from '../fixtures/stack';

const CALL_ID = '01890a5d-ac96-774b-bcce-b302099a8057';

/** A clock whose deadlines fire only when the test says; retry waits pass at once. */
function manualClock() {
  const timers: { ms: number; fire: () => void; cancelled: boolean }[] = [];
  const clock: Clock = {
    now: () => 0,
    sleep: async (_ms, signal) => {
      if (signal?.aborted) throw signal.reason;
    },
    timer: (ms, fire) => {
      const entry = { ms, fire, cancelled: false };
      timers.push(entry);
      return () => {
        entry.cancelled = true;
      };
    },
  };
  return { clock, timers };
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A server that takes every request and never answers; `reached` resolves on the first one. */
async function stalled() {
  let reached!: () => void;
  const first = new Promise<void>((resolve) => (reached = resolve));
  const s = await listen(() => reached());
  return { ...s, first };
}

t.test('a stalled gateway: the call times out by default (60 s) with svc_sdk_timeout', async (t) => {
  const { server, url, first } = await stalled();
  t.teardown(() => close(server));
  const { clock, timers } = manualClock();
  const svc = new SvcClient({ gatewayUrl: url, clock });
  const pending = rejection(svc.call('ep', 'x'));
  await first;
  t.same(
    timers.map((x) => x.ms),
    [DEFAULT_CALL_TIMEOUT_MS],
    'one deadline, the default for calls',
  );
  t.equal(DEFAULT_CALL_TIMEOUT_MS, 60_000);
  timers[0]?.fire();
  const err = await pending;
  t.type(err, SvcError);
  t.match(err, { code: 'svc_sdk_timeout', attempts: 1, status: 0 });
});

t.test('a stalled read times out by default (30 s); the client and the request can change it, 0 disables', async (t) => {
  const { server, url, first } = await stalled();
  t.teardown(() => close(server));
  const { clock, timers } = manualClock();
  const svc = new SvcClient({ apiUrl: url, indexerUrl: url, clock });
  const read = rejection(svc.providers());
  await first;
  t.same(
    timers.map((x) => x.ms),
    [DEFAULT_READ_TIMEOUT_MS],
    'the default for reads',
  );
  t.equal(DEFAULT_READ_TIMEOUT_MS, 30_000);
  timers[0]?.fire();
  t.match(await read, { name: 'SvcError', code: 'svc_sdk_timeout' });

  const perClient = new SvcClient({ apiUrl: url, gatewayUrl: url, clock, timeoutMs: 5000 });
  t.match(await rejection(perClient.stats()), { code: 'svc_sdk_config' }, 'stats() needs indexerUrl: refused before any timer');
  const b = rejection(perClient.status());
  const c = rejection(perClient.call('ep', 'x', { timeoutMs: 1234 }));
  t.same(
    timers.slice(1).map((x) => x.ms),
    [5000, 1234],
    "the client's timeoutMs, then the request's own",
  );
  timers[1]?.fire();
  timers[2]?.fire();
  t.match(await b, { code: 'svc_sdk_timeout' });
  t.match(await c, { code: 'svc_sdk_timeout' });

  const controller = new AbortController();
  const none = rejection(perClient.call('ep', 'x', { timeoutMs: 0, signal: controller.signal }));
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(timers.length, 3, 'timeoutMs 0: no deadline');
  controller.abort(new Error('caller gave up'));
  t.match(await none, { message: 'caller gave up' }, "the caller's own abort keeps its reason");
});

t.test('the deadline covers the body: a head and then a stall is svc_sdk_timeout', async (t) => {
  let reached!: () => void;
  const first = new Promise<void>((resolve) => (reached = resolve));
  const { server, url } = await listen((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-svc-call-id': CALL_ID, 'x-svc-outcome': 'ok' });
    res.write('{"partial":');
    reached();
  });
  t.teardown(() => close(server));
  const { clock, timers } = manualClock();
  const svc = new SvcClient({ gatewayUrl: url, clock });
  const pending = rejection(svc.call('ep', 'x'));
  await first;
  // The SDK arms its body timer once the head has reached it, a few turns after the write.
  await waitFor(() => timers.length > 0, 'the body timer');
  t.equal(timers.length, 1);
  timers[0]?.fire();
  t.match(await pending, { name: 'SvcError', code: 'svc_sdk_timeout' });
});

/** A fetch that counts the body bytes the SDK pulled from each answer. */
function counting(): { fetch: FetchLike; read: () => number } {
  let total = 0;
  return {
    read: () => total,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      if (res.body === null) return res;
      const counter = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          total += chunk.byteLength;
          controller.enqueue(chunk);
        },
      });
      return new Response(res.body.pipeThrough(counter), { status: res.status, headers: res.headers });
    },
  };
}

/** Streams `total` bytes in 64 KiB chunks, minding back-pressure; `closed` says whether the client hung up first. */
async function bigAnswer(total: number, headers: Record<string, string>) {
  const state = { closedEarly: false, sent: 0 };
  let ended!: () => void;
  const done = new Promise<void>((resolve) => (ended = resolve));
  const { server, url } = await listen((_req, res) => {
    res.writeHead(200, headers);
    const chunk = Buffer.alloc(65_536, 0x61);
    const pump = () => {
      while (state.sent < total) {
        state.sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    res.on('close', () => {
      state.closedEarly = !res.writableFinished;
      ended();
    });
    pump();
  });
  return { server, url, state, done };
}

t.test(
  'an answer past maxResponseBytes (default 16 MiB) is svc_sdk_response_too_large, with the call id, the connection closed',
  async (t) => {
    t.equal(DEFAULT_MAX_RESPONSE_BYTES, 16_777_216);
    const total = 4 * DEFAULT_MAX_RESPONSE_BYTES;
    const { server, url, state, done } = await bigAnswer(total, {
      'content-type': 'application/octet-stream',
      'x-svc-call-id': CALL_ID,
      'x-svc-outcome': 'ok',
    });
    t.teardown(() => close(server));
    const { fetch, read } = counting();
    const svc = new SvcClient({ gatewayUrl: url, fetch });
    const err = await rejection(svc.call('ep', 'x'));
    t.type(err, SvcError);
    t.match(err, { code: 'svc_sdk_response_too_large', callId: CALL_ID, status: 200 });
    t.ok(read() > DEFAULT_MAX_RESPONSE_BYTES, 'read up to the cap');
    t.ok(read() <= DEFAULT_MAX_RESPONSE_BYTES + 1_048_576, `read no more than the cap and a chunk (${read()} bytes)`);
    await done;
    t.ok(state.closedEarly, 'the connection was closed before the server sent the whole answer');
    t.ok(state.sent < total);
  },
);

t.test('the cap counts decoded bytes: a small gzip of a big body is refused; reads are capped too', async (t) => {
  const zipped = gzipSync(Buffer.alloc(4 * 1_048_576, 0x20));
  t.ok(zipped.length < 65_536, 'the encoded answer is far under the cap');
  const { server, url } = await listen((req, res) => {
    if (req.url === '/v1/ep/zip') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(zipped.length) });
      res.end(zipped);
      return;
    }
    if (req.url === '/v1/ep/declared') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 * 1_048_576) });
      res.write('[');
      return; // the declared length alone is over the cap
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ providers: 'x'.repeat(2 * 1_048_576) }));
  });
  t.teardown(() => close(server));
  const { fetch, read } = counting();
  const svc = new SvcClient({ gatewayUrl: url, apiUrl: url, fetch, maxResponseBytes: 1_048_576 });
  t.match(await rejection(svc.call('ep', 'zip')), { name: 'SvcError', code: 'svc_sdk_response_too_large' }, 'gzip: decoded bytes');
  const before = read();
  t.match(await rejection(svc.call('ep', 'declared')), { code: 'svc_sdk_response_too_large' }, 'Content-Length over the cap');
  t.equal(read(), before, 'refused unread');
  t.match(await rejection(svc.providers()), { code: 'svc_sdk_response_too_large', callId: null }, 'a read');
  const fits = new SvcClient({ gatewayUrl: url, maxResponseBytes: 8 * 1_048_576 });
  t.equal(((await fits.call('ep', 'zip')).body as string).length, 4 * 1_048_576, 'under the cap: the whole body');
});

function answer(headers: Record<string, string>, body = '{}', status = 200): FetchLike {
  return async () => new Response(body, { status, headers: { 'content-type': 'application/json', ...headers } });
}

t.test('malformed X-Svc-* headers are refused with svc_sdk_bad_response, not passed on', async (t) => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ['an unknown outcome', { 'x-svc-call-id': CALL_ID, 'x-svc-outcome': 'great' }, /X-Svc-Outcome "great"/],
    ['a call id that is not a UUIDv7', { 'x-svc-call-id': 'abc', 'x-svc-outcome': 'ok' }, /X-Svc-Call-Id "abc"/],
    ['a UUIDv4 as call id', { 'x-svc-call-id': '01890a5d-ac96-474b-bcce-b302099a8057' }, /X-Svc-Call-Id/],
    ['a negative refund', { 'x-svc-call-id': CALL_ID, 'x-svc-refund': '-5' }, /X-Svc-Refund "-5"/],
    ['a latency that is not a number', { 'x-svc-latency-ms': 'soon' }, /X-Svc-Latency-Ms/],
    [
      'an unknown coverage',
      { 'x-svc-call-id': CALL_ID, 'x-svc-coverage': 'partial' },
      /X-Svc-Coverage "partial" is not one of covered, none/,
    ],
  ];
  for (const [what, headers, detail] of cases) {
    const svc = new SvcClient({ gatewayUrl: 'http://gateway.test', fetch: answer(headers), retry: { max: 0 } });
    const err = await rejection(svc.call('ep', 'x'));
    t.type(err, SvcError, what);
    t.match(err, { code: 'svc_sdk_bad_response', status: 200, callId: null, detail }, what);
  }
  const problem = JSON.stringify({ type: 'x', title: 't', status: 502, detail: 'd', code: 'svc_upstream_unavailable' });
  const svc = new SvcClient({
    gatewayUrl: 'http://gateway.test',
    fetch: answer({ 'content-type': 'application/problem+json', 'x-svc-call-id': 'nope' }, problem, 502),
  });
  t.match(await rejection(svc.call('ep', 'x')), { code: 'svc_sdk_bad_response' }, 'on a problem answer too');
  const good = new SvcClient({
    gatewayUrl: 'http://gateway.test',
    fetch: answer({ 'x-svc-call-id': CALL_ID, 'x-svc-outcome': 'server_error' }),
  });
  t.match(await good.call('ep', 'x'), { callId: CALL_ID, outcome: 'server_error' }, 'well-formed headers pass');
});

t.test('a read whose answer is not JSON, or an error without a problem body, is svc_sdk_bad_response', async (t) => {
  const html = new SvcClient({ apiUrl: 'http://api.test', fetch: answer({ 'content-type': 'text/html' }, '<html>') });
  const err = await rejection(html.providers());
  t.type(err, SvcError);
  t.match(err, { code: 'svc_sdk_bad_response', status: 200 });
  const bare = new SvcClient({ apiUrl: 'http://api.test', fetch: answer({ 'content-type': 'text/plain' }, 'oops', 500) });
  t.match(await rejection(bare.status()), { name: 'SvcError', code: 'svc_sdk_bad_response', status: 500 });
  const scalar = new SvcClient({ indexerUrl: 'http://idx.test', fetch: answer({}, 'null') });
  const pages = scalar.activity();
  t.match(await rejection(pages.next()), { name: 'SvcError', code: 'svc_sdk_bad_response' }, 'JSON that is not an object');
});

t.test('connection refused is svc_sdk_network with the system error as cause', async (t) => {
  const { server, url } = await listen(() => undefined);
  await close(server);
  const svc = new SvcClient({ gatewayUrl: url, apiUrl: url, retry: { max: 1, baseDelayMs: 0, jitter: 0 } });
  for (const [what, p] of [
    ['call', svc.call('ep', 'x')],
    ['read', svc.providers()],
  ] as const) {
    const err = await rejection(p);
    t.type(err, SvcError, what);
    t.notOk(err instanceof TypeError, `${what}: not a TypeError`);
    t.match(err, { code: 'svc_sdk_network', attempts: 2 }, `${what}: retried once (nothing was sent), then thrown`);
    t.equal((err as { cause?: { code?: string } }).cause?.code, 'ECONNREFUSED', `${what}: the cause has the system code`);
  }
  const odd = new SvcClient({
    gatewayUrl: 'http://gateway.test',
    fetch: () => Promise.reject(new Error('proxy exploded')),
  });
  t.match(await rejection(odd.call('ep', 'x')), { name: 'SvcError', code: 'svc_sdk_network', cause: { message: 'proxy exploded' } });
});

t.test('configuration mistakes are svc_sdk_config, never a plain TypeError', async (t) => {
  const construct = (options: unknown) => async () => new SvcClient(options as SvcClientOptions);
  const ok = new SvcClient({ gatewayUrl: 'http://gateway.test', fetch: answer({}) });
  const cases: [string, () => Promise<unknown>][] = [
    ['a relative URL', construct({ gatewayUrl: '/gw' })],
    ['a URL with a query', construct({ apiUrl: 'http://api.test/?x=1' })],
    ['an ftp URL', construct({ indexerUrl: 'ftp://idx.test' })],
    ['a key with a newline', construct({ key: 'svc_beta_x\n' })],
    ['a negative timeoutMs', construct({ timeoutMs: -1 })],
    ['a fractional timeoutMs', construct({ timeoutMs: 1.5 })],
    ['maxResponseBytes 0', construct({ maxResponseBytes: 0 })],
    ['retry.max -1', construct({ retry: { max: -1 } })],
    ['retry null', construct({ retry: null })],
    ['options null', construct(null)],
    ['a fetch that is not a function', construct({ fetch: 'nope' })],
    ['call() without gatewayUrl', () => new SvcClient({}).call('ep', 'x')],
    ['providers() without apiUrl', () => new SvcClient({}).providers()],
    ['activity() without indexerUrl', () => new SvcClient({}).activity().next()],
    ['verifyRefund() without indexerUrl', () => new SvcClient({}).verifyRefund(CALL_ID)],
    ['a bad endpoint id', () => ok.call('Not An Id', 'x')],
    ['a path out of the endpoint', () => ok.call('ep', '../other')],
    ['a per-call timeoutMs that is not a number', () => ok.call('ep', 'x', { timeoutMs: 'soon' as unknown as number })],
    ['a bad header name', () => ok.call('ep', 'x', { headers: { 'bad header': 'x' } })],
    ['a body JSON cannot hold', () => ok.call('ep', 'x', { body: { n: 1n } })],
    ['a streamed body', () => ok.call('ep', 'x', { body: new ReadableStream() })],
    [
      'a GET with a body (fetch refuses it)',
      () => new SvcClient({ gatewayUrl: 'http://127.0.0.1:9' }).call('ep', 'x', { method: 'GET', body: 'x' }),
    ],
    ['verifyRefund() with an id that is not a call id', () => new SvcClient({ indexerUrl: 'http://idx.test' }).verifyRefund('nope')],
  ];
  for (const [what, run] of cases) {
    const err = await rejection(run());
    t.type(err, SvcError, what);
    t.notOk(err instanceof TypeError, `${what}: not a TypeError`);
    t.match(err, { code: 'svc_sdk_config', status: 0, attempts: 0 }, what);
  }
});

t.test('verifyRefund with ok: false takes no amount from the unverified proof', async (t) => {
  const proof = {
    leaf: { batch: 3, call_id: CALL_ID, provider: 'weather', outcome: 'server_error', premium: 0, refund: 2150, clamp: null },
    leaf_index: 0,
    tree_size: 1,
    audit_path: [],
    receipt: {
      v: 1,
      batch: 3,
      prev: '0'.repeat(64),
      root: 'f'.repeat(64),
      tree_size: 1,
      refunds: 2150,
      premiums: 0,
      settled_at: '2026-01-01T00:00:00.000Z',
      kid: 'k',
      sig: 'AAAA',
    },
  };
  const svc = new SvcClient({ indexerUrl: 'http://idx.test', fetch: answer({}, JSON.stringify(proof)) });
  const verdict = await svc.verifyRefund(CALL_ID, { jwks: { keys: [] } });
  t.equal(verdict.ok, false);
  t.ok(verdict.reasons.length > 0, 'with reasons');
  t.equal(verdict.refund, null, 'no refund from unverified data');
  t.equal(verdict.premium, null, 'no premium from unverified data');
});
