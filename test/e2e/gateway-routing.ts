/**
 * Routing through a real gateway process (docs/design.md §3.1–3.2): both path forms reach
 * `<base>/<path>?<query>` exactly; unknown endpoints are 404, a method the endpoint does not
 * list is 405 with `Allow`; every attempt to leave the endpoint's base path is 400 and never
 * reaches the upstream.
 */
import t from 'tap';
import { GENEROUS_LIMITS, assertProblem, rawRequest, request, startStack } from '../fixtures/stack';
import { ENGINES } from '../fixtures/engines';
import { startUpstream } from '../fixtures/upstream';

for (const engine of ENGINES)
  t.test(`routing [${engine}]`, async (t) => {
    const stack = await startStack(t, { engine, controlEnv: GENEROUS_LIMITS });
    const up = await startUpstream(t);
    await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base` });
    const version = await stack.addEndpoint({ id: 'reader', upstream: `${up.url}/read/`, methods: ['GET'] });
    await stack.applied(version);
    const gw = stack.gateway;

    await t.test('both path forms reach <base>/<path>?<query> exactly', async (t) => {
      up.clear();
      const target = '/a/b%20c/d.json?x=1&y=%2Fz&flag';
      for (const prefix of ['/v1/ep', '/ep']) {
        const res = await request(gw, prefix + target, { body: '{"n":1}', headers: { 'content-type': 'application/json' } });
        t.equal(res.status, 200, `${prefix}: 200`);
        t.same(res.body, { ok: true, method: 'POST', url: `/base${target}` }, `${prefix}: the upstream's answer comes back`);
      }
      t.same(
        up.requests.map((r) => r.url),
        [`/base${target}`, `/base${target}`],
        'the upstream saw the path and query verbatim, twice',
      );
      t.same(
        up.requests.map((r) => r.body.toString()),
        ['{"n":1}', '{"n":1}'],
        'the body was forwarded',
      );
      t.same(
        up.requests.map((r) => r.method),
        ['POST', 'POST'],
      );
    });

    await t.test('the endpoint root and a trailing slash', async (t) => {
      up.clear();
      t.equal((await request(gw, '/v1/ep', { body: '' })).status, 200);
      t.equal((await request(gw, '/ep/', { body: '' })).status, 200);
      t.equal((await request(gw, '/ep?only=query', { body: '' })).status, 200);
      t.same(
        up.requests.map((r) => r.url),
        ['/base', '/base/', '/base?only=query'],
      );
    });

    await t.test('methods the endpoint lists pass; others are 405 with Allow', async (t) => {
      up.clear();
      const listed = await request(gw, '/v1/reader/items?page=2', { method: 'GET' });
      t.equal(listed.status, 200, 'GET on an endpoint that lists GET');
      t.same(
        up.requests.map((r) => [r.method, r.url]),
        [['GET', '/read/items?page=2']],
      );

      for (const path of ['/v1/ep/x', '/ep/x']) {
        const res = await request(gw, path, { method: 'GET' });
        assertProblem(t, res, 405, 'svc_method_not_allowed', `GET ${path}`);
        t.equal(res.headers.allow, 'POST', 'Allow names what the endpoint accepts');
      }
      const put = await request(gw, '/v1/reader/items', { method: 'PUT', body: '{}' });
      assertProblem(t, put, 405, 'svc_method_not_allowed', 'PUT on the GET endpoint');
      t.equal(put.headers.allow, 'GET, HEAD, POST');
      t.equal(up.requests.length, 1, 'no refused method reached the upstream');
    });

    await t.test('unknown and reserved endpoints are 404 svc_unknown_endpoint', async (t) => {
      up.clear();
      for (const path of ['/v1/nope/x', '/nope/x', '/v1/nope', '/_admin/v1/status', '/v1/_sync/v1/stream', '/v1/']) {
        const res = await request(gw, path, { body: '{}' });
        assertProblem(t, res, 404, 'svc_unknown_endpoint', path);
        t.notMatch(res.text, up.url, 'no upstream URL in the answer');
      }
      t.equal(up.requests.length, 0, 'nothing reached the upstream');
    });

    await t.test('path escapes are 400 and never reach the upstream', async (t) => {
      up.clear();
      const attempts = [
        '/v1/ep/../x',
        '/v1/ep/..',
        '/ep/../../etc/passwd',
        '/v1/ep/%2e%2e/x',
        '/v1/ep/%2E%2E/x',
        '/v1/ep/.%2e/x',
        '/v1/ep/%2fetc',
        '/v1/ep/a%2F..%2Fb',
        '/v1/ep//evil.com/x',
        '/ep//evil.com/x',
        '/v1/ep/%252e%252e/x',
        '/v1/ep/%25252e%25252e/x',
        '/v1/ep/..%5cx',
        '/v1/ep/%5c%5cevil.com/x',
        '/v1/ep/http:%2f%2fevil/x',
        '/v1/ep/a/./b',
      ];
      for (const path of attempts) {
        const res = await request(gw, path, { body: '{}' });
        assertProblem(t, res, 400, 'svc_bad_request', path);
      }
      for (const target of ['http://evil/x', `http://127.0.0.1:${new URL(gw).port}/v1/ep/x`]) {
        const raw = await rawRequest(
          Number(new URL(gw).port),
          `POST ${target} HTTP/1.1\r\nHost: evil\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
        );
        assertProblem(t, raw, 400, 'svc_bad_request', `absolute-form ${target}`);
      }
      t.equal(up.requests.length, 0, 'the upstream recorded zero requests');

      // The same gateway still routes a clean path (the refusals above were about the paths).
      t.equal((await request(gw, '/v1/ep/x', { body: '{}' })).status, 200);
      t.same(
        up.requests.map((r) => r.url),
        ['/base/x'],
      );
    });
  });
