/**
 * The outside probe's edge cases, replayed with raw sockets against real processes (docs/design.md §2,
 * §9): requests Node's HTTP parser refuses (oversize headers, NUL or space in the request
 * line, bare LF, obs-fold, CL+TE, bad Content-Length), CONNECT and absolute-form targets get
 * problem+json with a catalogue code and `Connection: close` on all four listeners (gateway,
 * public api, indexer, control), and on the gateway none of them reaches the upstream. Then
 * what is published without credentials: `/metrics` on the gateway and on control needs the
 * metrics token (401 `svc_unauthorized` otherwise) and the gateway's `/health` says only
 * `ok` / `not_ready` and one word why.
 */
import t, { type Test } from 'tap';
import {
  GENEROUS_LIMITS,
  assertProblem,
  health,
  metrics,
  rawRequest,
  startGatewayProcess,
  startStack,
  waitFor,
  type RawResult,
} from '../fixtures/stack';
import { closedPort, startUpstream } from '../fixtures/upstream';

/** Probe bytes for a listener; `p` is a path that would reach the upstream on the gateway. */
interface Probe {
  name: string;
  bytes: (p: string, upstreamHost: string) => string;
  status: number;
  code: string;
}

const FILLER = 'a'.repeat(17 * 1024);

const PROBES: Probe[] = [
  {
    name: 'a header section over 16 KiB',
    bytes: (p) => `GET ${p} HTTP/1.1\r\nHost: x\r\nX-Fill: ${FILLER}\r\n\r\n`,
    status: 431,
    code: 'svc_headers_too_large',
  },
  { name: 'NUL in the request line', bytes: (p) => `GET ${p}\0x HTTP/1.1\r\nHost: x\r\n\r\n`, status: 400, code: 'svc_bad_request' },
  { name: 'a space in the request target', bytes: (p) => `GET ${p} x HTTP/1.1\r\nHost: x\r\n\r\n`, status: 400, code: 'svc_bad_request' },
  { name: 'bare LF line endings', bytes: (p) => `GET ${p} HTTP/1.1\nHost: x\n\n`, status: 400, code: 'svc_bad_request' },
  {
    name: 'an obs-fold header line',
    bytes: (p) => `GET ${p} HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n`,
    status: 400,
    code: 'svc_bad_request',
  },
  {
    name: 'Content-Length with Transfer-Encoding',
    bytes: (p) => `POST ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    status: 400,
    code: 'svc_bad_request',
  },
  {
    name: 'a non-numeric Content-Length',
    bytes: (p) => `POST ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n`,
    status: 400,
    code: 'svc_bad_request',
  },
  {
    name: 'two different Content-Lengths',
    bytes: (p) => `POST ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}`,
    status: 400,
    code: 'svc_bad_request',
  },
  {
    name: 'CONNECT',
    bytes: (_p, host) => `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
    status: 405,
    code: 'svc_method_not_allowed',
  },
  {
    name: 'an absolute-form target',
    bytes: (p, host) => `GET http://${host}${p} HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
    status: 400,
    code: 'svc_bad_request',
  },
  { name: 'an asterisk-form target', bytes: () => 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n', status: 400, code: 'svc_bad_request' },
];

/** Status, problem+json, code, `Connection: close`, an exact Content-Length, and a closed connection. */
function assertRefusal(t: Test, res: RawResult, probe: Probe, where: string): void {
  assertProblem(t, res, probe.status, probe.code, `${where}: ${probe.name}`);
  t.equal(res.headers['connection'], 'close', `${where}: ${probe.name}: Connection: close`);
  t.equal(Number(res.headers['content-length']), Buffer.byteLength(res.text), `${where}: ${probe.name}: Content-Length matches the body`);
  t.equal(res.body?.type, `https://svc.dev/errors#${probe.code}`, `${where}: ${probe.name}: type names the code`);
  if (probe.code === 'svc_method_not_allowed')
    t.match(res.headers['allow'] ?? '', /\bGET\b/, `${where}: ${probe.name}: Allow lists the methods served`);
}

const port = (url: string) => Number(new URL(url).port);

t.test('edge probe: parser errors, CONNECT and absolute-form on every listener; operator surfaces need the metrics token', async (t) => {
  const up = await startUpstream(t);
  const stack = await startStack(t, {
    controlEnv: GENEROUS_LIMITS,
    // A short header deadline so the 408 case below does not wait long.
    gatewayEnv: { SVC_GATEWAY_HEADERS_TIMEOUT_MS: '1500' },
  });
  await stack.applied(await stack.addEndpoint({ id: 'echo', upstream: `${up.url}/base`, methods: ['GET', 'POST'] }));
  const upstreamHost = `127.0.0.1:${up.port}`;
  let upstreamConnections = 0;
  up.server.on('connection', () => upstreamConnections++);

  await t.test('the gateway forwards a well-formed call (so "nothing reached the upstream" below means something)', async (t) => {
    const res = await rawRequest(port(stack.gateway), 'GET /echo/sane HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    t.equal(res.status, 200);
    t.equal(up.requestsTo('/base/sane').length, 1, 'the upstream saw it');
  });

  await t.test('gateway', async (t) => {
    for (const probe of PROBES) {
      await t.test(probe.name, async (t) => {
        up.clear();
        const connectionsBefore = upstreamConnections;
        const res = await rawRequest(port(stack.gateway), probe.bytes('/echo/probe', upstreamHost));
        assertRefusal(t, res, probe, 'gateway');
        t.same(up.requests, [], `gateway: ${probe.name}: the upstream saw no request`);
        t.equal(upstreamConnections, connectionsBefore, `gateway: ${probe.name}: and no new connection`);
      });
    }
  });

  const listeners = { api: stack.control.urls.api!, indexer: stack.control.urls.indexer!, control: stack.control.urls.control! };
  for (const [name, url] of Object.entries(listeners)) {
    await t.test(name, async (t) => {
      for (const probe of PROBES) {
        await t.test(probe.name, async (t) =>
          assertRefusal(t, await rawRequest(port(url), probe.bytes('/health', upstreamHost)), probe, name),
        );
      }
    });
  }

  await t.test('a request head not finished within gateway.headersTimeoutMs: 408 svc_request_timeout', async (t) => {
    up.clear();
    const res = await rawRequest(port(stack.gateway), 'GET /echo/slow HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    assertProblem(t, res, 408, 'svc_request_timeout');
    t.equal(res.headers['connection'], 'close');
    t.same(up.requests, [], 'the upstream saw nothing');
  });

  await t.test('the gateway counts these refusals by code', async (t) => {
    const text = (await metrics(stack.gateway, stack.metricsToken())).text;
    t.match(text, /svc_gateway_rejections_total\{code="svc_headers_too_large"\} 1\n/);
    t.match(text, /svc_gateway_rejections_total\{code="svc_method_not_allowed"\} 1\n/);
    t.match(text, /svc_gateway_rejections_total\{code="svc_bad_request"\} 9\n/);
  });

  await t.test('/metrics without the metrics token: 401 svc_unauthorized on the gateway and on control', async (t) => {
    const wrong = 'not-the-metrics-token-0123456789abcdef';
    for (const [name, url] of [
      ['gateway', stack.gateway],
      ['control', stack.control.url],
    ] as const) {
      for (const [what, token] of [
        ['no token', null],
        ['a wrong token', wrong],
        ['the admin token', stack.adminToken()],
      ] as const) {
        const res = await metrics(url, token);
        assertProblem(t, res, 401, 'svc_unauthorized', `${name} /metrics with ${what}`);
        t.match(res.headers['www-authenticate'], /^Bearer /, `${name} /metrics with ${what}: WWW-Authenticate`);
        t.notMatch(res.text, /gw-1|echo|svc_gateway_|svc_control_/, `${name} /metrics with ${what}: nothing about the system`);
      }
      const ok = await metrics(url, stack.metricsToken());
      t.equal(ok.status, 200, `${name} /metrics with the metrics token`);
      t.match(ok.headers['content-type'], /^text\/plain; version=0\.0\.4/);
    }
    t.match((await metrics(stack.gateway, stack.metricsToken())).text, /svc_gateway_requests_total\{endpoint="echo"/);
    const control = (await metrics(stack.control.url, stack.metricsToken())).text;
    t.match(control, /^svc_control_state_version \d+$/m);
    t.match(control, /^svc_control_gateway_connected\{gateway="gw-1"\} 1$/m);
  });

  await t.test('gateway /health without credentials says only ok; with the metrics token, the details', async (t) => {
    const open = await health(stack.gateway, null);
    t.equal(open.status, 200);
    t.equal(open.text, '{"status":"ok"}', 'exactly {"status":"ok"}: no gateway id, control URL, versions or endpoints');
    const wrong = await health(stack.gateway, 'not-the-metrics-token-0123456789abcdef');
    assertProblem(t, wrong, 401, 'svc_unauthorized', 'a wrong token');
    const detailed = await health(stack.gateway, stack.metricsToken());
    t.equal(detailed.status, 200);
    t.match(detailed.body, { status: 'ok', ready: true, gateway_id: 'gw-1', control_url: stack.control.url, control_connected: true });
  });

  await t.test('gateway /health in maintenance: 503 not_ready, reason maintenance', async (t) => {
    await stack.applied(await stack.setFlag('maintenance_mode', true));
    const open = await health(stack.gateway, null);
    t.equal(open.status, 503);
    t.equal(open.text, '{"status":"not_ready","reason":"maintenance"}');
    t.match(
      (await health(stack.gateway)).body,
      { status: 'not_ready', reason: 'maintenance', gateway_id: 'gw-1' },
      'the detailed body agrees',
    );
    await stack.applied(await stack.setFlag('maintenance_mode', false));
    t.equal((await health(stack.gateway, null)).text, '{"status":"ok"}', 'ok again when maintenance ends');
  });

  await t.test('gateway /health before any snapshot: 503 not_ready, reason no_snapshot', async (t) => {
    const lonely = await startGatewayProcess(t, {
      dataDir: stack.dataDir,
      controlUrl: `http://127.0.0.1:${await closedPort()}`,
      id: 'gw-lonely',
      waitReady: false,
    });
    const open = await waitFor(async () => {
      const res = await health(lonely.url, null);
      return res.status === 503 ? res : null;
    }, 'the lonely gateway to answer /health');
    t.equal(open?.text, '{"status":"not_ready","reason":"no_snapshot"}');
    const detailed = await health(lonely.url);
    t.match(detailed.body, { status: 'not_ready', ready: false, reason: 'no_snapshot', gateway_id: 'gw-lonely' });
    t.match(detailed.body.reason_detail, /\S/, 'the detailed body says more');
  });

  t.same(up.requests, [], 'in the end, the upstream saw nothing of any probe');
});
