/**
 * `Host` at the edge (RFC 9112 §3.2), replayed with raw sockets against real processes, once
 * per gateway engine: an HTTP/1.1 request without `Host`, or any request with two `Host`
 * field lines, is 400 `svc_bad_request` as problem+json with `Connection: close` on all five
 * listeners (the gateway on each engine, public api, indexer, control admin + sync), and on
 * the gateway nothing reaches the upstream. Before, Node's own check answered a missing `Host`
 * with an empty 400 and two `Host` lines were served. HTTP/1.0 needs no `Host` and is served.
 */
import t, { type Test } from 'tap';
import { GENEROUS_LIMITS, assertProblem, metrics, rawRequest, startStack, type RawResult } from '../fixtures/stack';
import { ENGINES } from '../fixtures/engines';
import { SDK_UA } from '../fixtures/public';
import { startUpstream } from '../fixtures/upstream';

interface Probe {
  name: string;
  /** The request head for `target` with `extra` header lines (each ending in CRLF). */
  bytes: (target: string, extra: string) => string;
}

const BODY = '{"q":1}';

const PROBES: Probe[] = [
  {
    name: 'HTTP/1.1 without Host',
    bytes: (target, extra) =>
      `POST ${target} HTTP/1.1\r\n${extra}Content-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
  },
  { name: 'HTTP/1.1 without Host, a GET', bytes: (target, extra) => `GET ${target} HTTP/1.1\r\n${extra}\r\n` },
  {
    name: 'HTTP/1.1 with two Host lines',
    bytes: (target, extra) => `GET ${target} HTTP/1.1\r\nHost: a.example\r\n${extra}Host: b.example\r\n\r\n`,
  },
  { name: 'HTTP/1.1 with the same Host twice', bytes: (target, extra) => `GET ${target} HTTP/1.1\r\nHost: x\r\n${extra}host: x\r\n\r\n` },
  {
    name: 'HTTP/1.0 with two Host lines',
    bytes: (target, extra) => `GET ${target} HTTP/1.0\r\nHost: a.example\r\n${extra}Host: b.example\r\n\r\n`,
  },
];

function assertRefused(t: Test, res: RawResult, what: string): void {
  assertProblem(t, res, 400, 'svc_bad_request', what);
  t.equal(res.headers['connection'], 'close', `${what}: Connection: close`);
  t.match(res.body?.detail, /Host/, `${what}: the detail names Host`);
}

const port = (url: string) => Number(new URL(url).port);

for (const engine of ENGINES)
  t.test(`Host: missing or repeated is 400 problem+json on every listener [${engine}]`, async (t) => {
    const up = await startUpstream(t);
    const stack = await startStack(t, { engine, controlEnv: GENEROUS_LIMITS });
    await stack.applied(await stack.addEndpoint({ id: 'echo', upstream: `${up.url}/base`, methods: ['GET', 'POST'] }));
    const admin = `Authorization: Bearer ${stack.adminToken()}\r\n`;

    // Where each listener serves a 200 for the same request with one Host, and what it needs to.
    const listeners = [
      { name: 'gateway', url: stack.gateway, target: '/v1/echo/probe', extra: '' },
      { name: 'api', url: stack.control.urls.api!, target: '/health', extra: `User-Agent: ${SDK_UA}\r\n` },
      { name: 'indexer', url: stack.control.urls.indexer!, target: '/health', extra: '' },
      { name: 'control (admin)', url: stack.control.url, target: '/_admin/v1/status', extra: admin },
      { name: 'control (sync)', url: stack.control.url, target: '/_sync/v1/ack', extra: `Authorization: Bearer not-the-sync-token\r\n` },
    ];

    for (const l of listeners) {
      await t.test(l.name, async (t) => {
        for (const probe of PROBES) {
          up.clear();
          assertRefused(t, await rawRequest(port(l.url), probe.bytes(l.target, l.extra)), `${l.name}: ${probe.name}`);
          t.same(up.requests, [], `${l.name}: ${probe.name}: the upstream saw nothing`);
        }
        // The same listener serves these, so the refusals above are about Host alone.
        const one = await rawRequest(port(l.url), `GET ${l.target} HTTP/1.1\r\nHost: x\r\n${l.extra}Connection: close\r\n\r\n`);
        const old = await rawRequest(port(l.url), `GET ${l.target} HTTP/1.0\r\n${l.extra}\r\n`);
        if (l.name === 'control (sync)') {
          // The sync routes are behind the sync token: the answer comes from the route, not the edge.
          assertProblem(t, one, 401, 'svc_unauthorized', `${l.name}: one Host reaches the route`);
          assertProblem(t, old, 401, 'svc_unauthorized', `${l.name}: HTTP/1.0 without Host reaches the route`);
        } else {
          t.equal(one.status, 200, `${l.name}: HTTP/1.1 with one Host is served`);
          t.equal(old.status, 200, `${l.name}: HTTP/1.0 without Host is served`);
        }
        if (l.name === 'gateway') t.equal(up.requestsTo('/base/probe').length, 2, 'the gateway forwarded the two well-formed calls');
      });
    }

    const text = (await metrics(stack.gateway, stack.metricsToken())).text;
    t.match(text, new RegExp(`svc_gateway_rejections_total\\{code="svc_bad_request"\\} ${PROBES.length}\\n`), 'the gateway counts them');
  });
