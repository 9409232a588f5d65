/**
 * Rate limits through a real gateway process (docs/design.md §3.5): a key's own limit, a lift that
 * raises it, and per-IP limits for keyless calls that a client-supplied X-Forwarded-For cannot
 * escape. Limits come from control's config through the snapshot, so they are set in
 * control's environment. A 429 never reaches the upstream and never becomes an outcome.
 *
 * Control runs with a default key policy whose burst equals its count (60/60), so by the
 * gateway's burst rule (burst scales with the key's count in the default's proportion) a key
 * limited to 3/min has a bucket of 3: exactly the 4th call in a row is refused.
 */
import t, { type Test } from 'tap';
import { assertProblem, drained, request, startStack, type HttpResult } from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';

t.test('limits', async (t) => {
  const stack = await startStack(t, {
    controlEnv: { SVC_LIMITS_KEY_COUNT: '60', SVC_LIMITS_KEY_BURST: '60', SVC_LIMITS_IP_COUNT: '3', SVC_LIMITS_IP_BURST: '3' },
  });
  const up = await startUpstream(t);
  await stack.applied(await stack.addEndpoint({ id: 'ep', upstream: `${up.url}/base` }));
  const gw = stack.gateway;
  const admitted = new Set<string>();
  const call = async (path: string, headers: Record<string, string> = {}): Promise<HttpResult> => {
    const res = await request(gw, path, { body: '{}', headers });
    const id = res.headers['x-svc-call-id'];
    if (typeof id === 'string') admitted.add(id);
    return res;
  };
  const assertLimited = (t: Test, res: HttpResult, policy: string, what: string) => {
    assertProblem(t, res, 429, 'svc_rate_limited', what);
    const retry = String(res.headers['retry-after']);
    t.match(retry, /^\d+$/, `${what}: Retry-After is an integer`);
    t.ok(Number(retry) >= 1, `${what}: Retry-After ≥ 1`);
    t.equal(res.headers['ratelimit-policy'], policy, `${what}: RateLimit-Policy`);
    t.match(res.headers.ratelimit, new RegExp(`^"${policy.split('"')[1]}";r=0;t=\\d+$`), `${what}: RateLimit says nothing remains`);
    t.equal(res.headers['x-svc-call-id'], undefined, `${what}: no call id`);
  };

  await t.test('a key limited to 3/min: the 4th call in a row is 429; a lift raises it', async (t) => {
    const issued = await stack.cli(['keys', 'issue', '--limit', '3/min', '--json']);
    t.equal(issued.code, 0, `keys issue: exit 0 ${issued.stderr}`);
    const key = issued.json<{ id: string; key: string; version: number }>();
    await stack.applied(key.version);
    const auth = { authorization: `Bearer ${key.key}` };
    up.clear();

    for (let i = 0; i < 3; i++) {
      const res = await call(i % 2 ? '/ep/x' : '/v1/ep/x', auth);
      t.equal(res.status, 200, `call ${i + 1}: 200`);
      t.equal(res.headers['ratelimit-policy'], '"key";q=3;w=60;svc-burst=3', 'RateLimit-Policy names the key policy');
      t.match(res.headers.ratelimit, new RegExp(`^"key";r=${2 - i};t=\\d+$`), 'RateLimit counts down');
    }
    for (let i = 0; i < 2; i++) assertLimited(t, await call('/v1/ep/x', auth), '"key";q=3;w=60;svc-burst=3', `call ${4 + i}`);
    t.equal(up.requests.length, 3, 'the upstream saw only the admitted calls');

    const lift = await stack.cli(['keys', 'lift', key.id, '--limit', '100000/min', '--for', '1h', '--json']);
    t.equal(lift.code, 0, `keys lift: exit 0 ${lift.stderr}`);
    await stack.applied(lift.json().version);
    const lifted = await call('/v1/ep/x', auth);
    t.equal(lifted.status, 200, 'after the lift the key is admitted again');
    t.equal(lifted.headers['ratelimit-policy'], '"key";q=100000;w=60;svc-burst=100000', 'under the lifted policy');
    t.equal(up.requests.length, 4);
  });

  await t.test('keyless calls are limited per client IP; X-Forwarded-For does not buy a fresh bucket', async (t) => {
    up.clear();
    for (let i = 0; i < 3; i++) {
      const res = await call(i % 2 ? '/ep/free' : '/v1/ep/free');
      t.equal(res.status, 200, `keyless call ${i + 1}: 200`);
      t.equal(res.headers['ratelimit-policy'], '"ip";q=3;w=60;svc-burst=3');
    }
    assertLimited(t, await call('/v1/ep/free'), '"ip";q=3;w=60;svc-burst=3', 'keyless call 4');
    for (const xff of ['203.0.113.9', '198.51.100.1, 203.0.113.10', '127.0.0.2']) {
      assertLimited(t, await call('/v1/ep/free', { 'x-forwarded-for': xff }), '"ip";q=3;w=60;svc-burst=3', `X-Forwarded-For: ${xff}`);
    }
    assertLimited(
      t,
      await call('/v1/ep/free', { forwarded: 'for=203.0.113.9', 'x-real-ip': '203.0.113.9' }),
      '"ip";q=3;w=60;svc-burst=3',
      'Forwarded / X-Real-IP',
    );
    t.equal(up.requests.length, 3, 'the upstream saw only the admitted keyless calls');
  });

  await t.test('control restarted with other limits: gateways enforce them', async (t) => {
    const before = (await stack.admin('GET', '/_admin/v1/status')).body.version as number;
    await stack.restartControl({
      SVC_LIMITS_KEY_COUNT: '60',
      SVC_LIMITS_KEY_BURST: '60',
      SVC_LIMITS_IP_COUNT: '5',
      SVC_LIMITS_IP_BURST: '5',
    });
    const after = (await stack.admin('GET', '/_admin/v1/status')).body.version as number;
    t.ok(after > before, 'the new limits are a new state version');
    await stack.applied(after);
    const res = await call('/v1/ep/free');
    t.equal(res.headers['ratelimit-policy'], '"ip";q=5;w=60;svc-burst=5', 'the gateway applies the new per-IP policy');
  });

  await t.test('no 429 became an outcome', async (t) => {
    await drained(gw);
    const rows = stack.outcomes();
    t.same(rows.map((r) => r.call_id).sort(), [...admitted].sort(), 'control holds exactly the admitted calls');
    t.notOk(
      rows.some((r) => r.status === 429),
      'no 429 in outcomes',
    );
  });
});
