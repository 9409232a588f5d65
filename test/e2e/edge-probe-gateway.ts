/**
 * The outside probe's gateway cases, replayed with raw sockets against real processes
 * (control + gateway from the built CLI, a recording test upstream):
 *
 * - slow and incomplete request bodies are the caller's doing: 408 `svc_request_timeout`, the
 *   connection closed, recorded as `caller_error` with no refund and no premium, and the
 *   provider's failure rate and tier do not move (before: 504, a refunded network_error, and
 *   two such calls in a hundred made the provider ELEVATED); their latency is the provider's,
 *   0 since it never had the whole request, in `X-Svc-Latency-Ms`, the outcome record and
 *   `/api/activity` (before: the caller's own stall, `X-Svc-Latency-Ms: 2001`);
 * - more than `gateway.maxHeaders` header fields is 431, and a GET/HEAD body in either
 *   framing is 400, with nothing forwarded (before: a Content-Length after 100 filler fields
 *   slipped past the body check and reached the upstream);
 * - with the beta gate on, a caller without a valid key gets 403 for every path, so endpoint
 *   ids cannot be enumerated; 404/405 only go to admitted callers.
 */
import t from 'tap';
import net from 'node:net';
import { GENEROUS_LIMITS, drained, rawRequest, request, sleep, startStack, waitFor } from '../fixtures/stack';
import { ENGINES } from '../fixtures/engines';
import { SDK_UA } from '../fixtures/public';
import { startUpstream } from '../fixtures/upstream';
import { keyLedger } from '../fixtures/ledger';

const BODY_TIMEOUT_MS = 400;
const PRICE = 2000;
const PREMIUM = 100;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** The gateway ended the connection (FIN) after its answer. */
  closed: boolean;
}

/** Parse one raw HTTP/1.1 answer. */
function parse(text: string, closed: boolean): Answer {
  const end = text.indexOf('\r\n\r\n');
  const lines = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body: any = null;
  try {
    body = JSON.parse(text.slice(end + 4));
  } catch {
    body = null;
  }
  return { status: Number(lines[0]?.split(' ')[1] ?? 0), headers, body, closed };
}

/** Send `start`, then let `then` write more (or nothing); resolve when the gateway closes the socket. */
function raw(gatewayUrl: string, start: string, then?: (socket: net.Socket) => Promise<void>): Promise<Answer> {
  const url = new URL(gatewayUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let text = '';
    const guard = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close from the gateway; got ${JSON.stringify(text)}`));
    }, 15_000);
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('end', () => {
      clearTimeout(guard);
      socket.destroy();
      resolve(parse(text, true));
    });
    socket.on('error', (err) => {
      clearTimeout(guard);
      reject(err);
    });
    socket.write(start);
    if (then) void then(socket);
  });
}

for (const engine of ENGINES)
  t.test(`edge probe: the gateway [${engine}]`, async (t) => {
    const stack = await startStack(t, {
      engine,
      controlEnv: { ...GENEROUS_LIMITS, SVC_TIERS_MIN_CALLS: '20', SVC_CACHE_PROVIDERS_TTL_S: '1', SVC_SETTLER_CADENCE_MS: '3600000' },
      gatewayEnv: { SVC_GATEWAY_CLIENT_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS), SVC_GATEWAY_BODY_LIMIT_BYTES: '1024' },
    });
    const up = await startUpstream(t);
    // A trickled body takes longer than the endpoint's timeout, and a stalled one would reach it:
    // before the fix, the endpoint timeout ran from the request head, so both became the
    // provider's 504. Generous SLA and timeout keep ordinary calls ok on a loaded machine.
    const version = await stack.addEndpoint({
      id: 'probe',
      upstream: `${up.url}/probe`,
      methods: ['POST', 'GET'],
      price: PRICE,
      premium: PREMIUM,
      sla_ms: 1_000,
      timeout_ms: 1_500,
    });
    const key = await stack.issueKey({ name: 'prober' });
    await stack.applied(Math.max(version, key.version, await stack.setFlag('beta_gate_enabled', true)));
    const funded = await stack.cli(['pool', 'fund', '1000000', '--json']); // covers every call of the probe
    t.equal(funded.code, 0, funded.stderr);
    const auth = `Authorization: Bearer ${key.key}\r\n`;
    const gw = stack.gateway;
    const port = Number(new URL(gw).port);

    // A steady baseline: 40 good calls, so the provider is rated (RELIABLE) before the probe.
    for (let i = 0; i < 40; i++) {
      const res = await request(gw, '/v1/probe/ok', {
        body: '{}',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      });
      t.equal(res.status, 200);
    }
    const providers = async () =>
      (await request(stack.control.urls.api!, '/api/v1/providers', { method: 'GET', headers: { 'user-agent': SDK_UA } })).body.providers[0];
    await drained(gw);
    const before = await waitFor(async () => {
      const p = await providers();
      return p?.calls === 40 ? p : null;
    }, 'the baseline in the providers list');
    t.match(before, { tier: 'RELIABLE', failure_rate: 0, calls: 40 });

    const callerErrors: Answer[] = [];

    await t.test('declared length never completed: 408, connection closed, caller_error, nothing refunded', async (t) => {
      const upBefore = up.requests.length;
      const a = await raw(
        gw,
        `POST /v1/probe/slow HTTP/1.1\r\nHost: gw\r\n${auth}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n0123456789`,
      );
      t.equal(a.status, 408);
      t.equal(a.headers['content-type'], 'application/problem+json');
      t.equal(a.body?.code, 'svc_request_timeout');
      t.equal(a.headers.connection, 'close');
      t.ok(a.closed, 'the gateway closed the connection');
      t.match(a.headers, { 'x-svc-outcome': 'caller_error', 'x-svc-refund': '0', 'x-svc-premium': '0' });
      t.equal(a.headers['x-svc-latency-ms'], '0', 'the caller’s stall is not the provider’s latency');
      t.notOk(
        up.requests.slice(upBefore).some((r) => r.complete),
        'the upstream never got a complete request',
      );
      callerErrors.push(a);
    });

    await t.test('trickled body (one byte every 120 ms, 2 s in all, past the endpoint timeout) is forwarded and is ok', async (t) => {
      const body = '{"trickled":true}';
      const a = await raw(
        gw,
        `POST /v1/probe/trickle HTTP/1.1\r\nHost: gw\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
        async (s) => {
          for (const ch of body) {
            if (s.destroyed) return;
            s.write(ch);
            await sleep(120); // the scenario: a slow caller, within the body timeout between bytes
          }
        },
      );
      t.equal(a.status, 200, JSON.stringify(a.body));
      t.equal(a.headers['x-svc-outcome'], 'ok', 'the provider answered at once after the last byte: no latency breach, no timeout');
      t.equal(a.headers['x-svc-premium'], String(PREMIUM));
      const seen = up.requestsTo('/probe/trickle');
      t.equal(seen.length, 1);
      t.equal(seen[0]?.body.toString(), body, 'the whole body reached the upstream');
    });

    await t.test('trickled body slower than the body timeout: 408 caller_error', async (t) => {
      const a = await raw(gw, `POST /v1/probe/crawl HTTP/1.1\r\nHost: gw\r\n${auth}Content-Length: 20\r\n\r\n`, async (s) => {
        for (let i = 0; i < 20 && !s.destroyed; i++) {
          s.write('x');
          await sleep(BODY_TIMEOUT_MS * 2); // the scenario: a caller slower than the body timeout
        }
      });
      t.equal(a.status, 408);
      t.equal(a.body?.code, 'svc_request_timeout');
      t.equal(a.headers['x-svc-outcome'], 'caller_error');
      t.equal(a.headers['x-svc-latency-ms'], '0');
      callerErrors.push(a);
    });

    await t.test('a caller that leaves mid-body is recorded as caller_error 499', async (t) => {
      const url = new URL(gw);
      const socket = net.connect(Number(url.port), url.hostname);
      await new Promise((r) => socket.once('connect', r));
      socket.write(`POST /v1/probe/leave HTTP/1.1\r\nHost: gw\r\n${auth}Content-Length: 100\r\n\r\n0123`);
      await waitFor(() => up.requestsTo('/probe/leave').length === 1, 'the upstream request started');
      socket.destroy();
      await drained(gw);
      const rows = stack.outcomes().filter((r) => r.status === 499);
      t.equal(rows.length, 1, 'one record for the call the caller left');
      t.equal(rows[0]?.outcome, 'caller_error');
      t.equal(rows[0]?.key_id, key.id);
    });

    await t.test('a chunked body over the limit: 413 caller_error, connection closed', async (t) => {
      const chunk = 'x'.repeat(600);
      const a = await raw(gw, `POST /v1/probe/big HTTP/1.1\r\nHost: gw\r\n${auth}Transfer-Encoding: chunked\r\n\r\n`, async (s) => {
        for (let i = 0; i < 3 && !s.destroyed; i++) {
          s.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
          await sleep(30); // the scenario: chunks that arrive one by one, as a streaming caller sends them
        }
      });
      t.equal(a.status, 413);
      t.equal(a.body?.code, 'svc_payload_too_large');
      t.match(a.headers, { 'x-svc-outcome': 'caller_error', connection: 'close', 'x-svc-latency-ms': '0' });
      t.ok(a.closed);
      callerErrors.push(a);
    });

    await t.test('caller errors move no money and leave the provider’s rating alone', async (t) => {
      await drained(gw);
      const ids = callerErrors.map((a) => a.headers['x-svc-call-id']);
      const rows = stack.outcomes();
      for (const id of ids)
        t.match(
          rows.find((r) => r.call_id === id),
          { outcome: 'caller_error', key_id: key.id },
          `${id} recorded as caller_error`,
        );
      t.same(
        rows
          .filter((r) => r.outcome === 'caller_error')
          .map((r) => r.status)
          .sort(),
        [408, 408, 413, 499],
      );
      t.same(
        rows.filter((r) => r.outcome === 'caller_error').map((r) => r.latency_ms),
        [0, 0, 0, 0],
        'the provider never had the whole request: latency 0 in every record',
      );

      const run = await stack.cli(['settler', 'run-once', '--json']);
      t.equal(run.code, 0, run.stderr);
      const balances = Object.fromEntries(
        ((await stack.cli(['ledger', 'balances', '--json'])).json().balances as { account: string; balance: number }[]).map((b) => [
          b.account,
          b.balance,
        ]),
      );
      // 41 ok calls pay the premium; the four caller errors move nothing.
      t.equal(balances[keyLedger(key.id)], -41 * PREMIUM, "the key's account paid only the premiums of its ok calls; no refund");
      const verify = await stack.cli(['ledger', 'verify']);
      t.equal(verify.code, 0, verify.stderr);

      const stats = (
        await request(stack.control.urls.indexer!, '/api/activity?limit=100', { method: 'GET', headers: { 'user-agent': SDK_UA } })
      ).body;
      const items = (stats.activity ?? []) as { outcome: string; refund: number | null; premium: number | null; latency_ms: number }[];
      const shown = items.filter((i) => i.outcome === 'caller_error');
      t.equal(shown.length, 4, 'the indexer lists them as caller_error');
      t.same(
        shown.map((i) => i.latency_ms),
        [0, 0, 0, 0],
        'with no provider latency',
      );
      t.ok(
        shown.every((i) => i.refund === 0 && i.premium === 0),
        'settled with no refund and no premium',
      );

      const after = await waitFor(async () => {
        const p = await providers();
        return p?.calls === 41 ? p : null;
      }, 'the providers list after the probe');
      t.match(after, { tier: 'RELIABLE', failure_rate: 0, calls: 41, failures: 0, caller_errors: 4 }, 'tier and failure rate did not move');
    });

    await t.test('more than 100 header fields: 431, nothing forwarded, whatever follows them', async (t) => {
      const upBefore = up.requests.length;
      const filler = (n: number) => Array.from({ length: n }, (_, i) => `X-Filler-${i}: ${i}\r\n`).join('');
      const cases: [string, string][] = [
        ['101 fields', `POST /v1/probe/h HTTP/1.1\r\nHost: gw\r\n${auth}${filler(99)}Content-Length: 0\r\nConnection: close\r\n\r\n`],
        ['300 fields', `POST /v1/probe/h HTTP/1.1\r\nHost: gw\r\n${auth}${filler(296)}Content-Length: 0\r\nConnection: close\r\n\r\n`],
        [
          'GET with Content-Length after 110 fields',
          `GET /v1/probe/h HTTP/1.1\r\nHost: gw\r\n${auth}${filler(110)}Content-Length: 5\r\nConnection: close\r\n\r\nhello`,
        ],
        [
          'GET chunked after 110 fields',
          `GET /v1/probe/h HTTP/1.1\r\nHost: gw\r\n${auth}${filler(110)}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
        ],
      ];
      for (const [what, bytes] of cases) {
        const res = await rawRequest(port, bytes);
        t.equal(res.status, 431, what);
        t.equal(res.body?.code, 'svc_headers_too_large', what);
      }
      const exactly = await rawRequest(
        port,
        `POST /v1/probe/h HTTP/1.1\r\nHost: gw\r\n${auth}${filler(96)}Content-Length: 0\r\nConnection: close\r\n\r\n`,
      );
      t.equal(exactly.status, 200, 'exactly 100 fields pass');
      t.equal(up.requests.length, upBefore + 1, 'only the call within the cap was forwarded');
    });

    await t.test('a body on GET or HEAD, in either framing: 400, nothing forwarded', async (t) => {
      const upBefore = up.requests.length;
      for (const [what, bytes] of [
        ['GET Content-Length', `GET /v1/probe/b HTTP/1.1\r\nHost: gw\r\n${auth}Content-Length: 5\r\nConnection: close\r\n\r\nhello`],
        [
          'GET chunked',
          `GET /v1/probe/b HTTP/1.1\r\nHost: gw\r\n${auth}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
        ],
      ] as const) {
        const res = await rawRequest(port, bytes);
        t.equal(res.status, 400, what);
        t.equal(res.body?.code, 'svc_bad_request', what);
      }
      t.equal(up.requests.length, upBefore, 'nothing reached the upstream');
    });

    await t.test('gate on: no key learns nothing about endpoints; 404/405 only for admitted callers', async (t) => {
      const upBefore = up.requests.length;
      for (const [method, path] of [
        ['POST', '/v1/nosuch/x'],
        ['POST', '/nosuch/x'],
        ['DELETE', '/v1/probe/x'],
        ['POST', '/v1/probe/x'],
        ['GET', '/v1/'],
        ['POST', '/health/x'],
      ]) {
        const keyless = await rawRequest(port, `${method} ${path} HTTP/1.1\r\nHost: gw\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
        t.equal(keyless.status, 403, `${method} ${path} without a key`);
        t.equal(keyless.body?.code, 'svc_auth_not_in_beta');
        const wrong = await rawRequest(
          port,
          `${method} ${path} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer svc_beta_${'1'.repeat(43)}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
        );
        t.equal(wrong.status, 403, `${method} ${path} with an unknown key`);
      }
      const unknown = await rawRequest(
        port,
        `POST /v1/nosuch/x HTTP/1.1\r\nHost: gw\r\n${auth}Content-Length: 0\r\nConnection: close\r\n\r\n`,
      );
      t.equal(unknown.status, 404);
      t.equal(unknown.body?.code, 'svc_unknown_endpoint');
      const method = await rawRequest(
        port,
        `DELETE /v1/probe/x HTTP/1.1\r\nHost: gw\r\n${auth}Content-Length: 0\r\nConnection: close\r\n\r\n`,
      );
      t.equal(method.status, 405);
      t.equal(method.body?.code, 'svc_method_not_allowed');
      t.equal(up.requests.length, upBefore, 'nothing reached the upstream');
    });
  });
