/**
 * Every admin route refuses a missing, wrong or malformed bearer token (an operator-shaped one
 * nobody holds included) with one 401 shape, before routing and before any change; with a
 * valid token, unknown routes are 404 and wrong methods 405 with Allow.
 */
import t from 'tap';
import { startTestControl, type TestControl } from '../fixtures/control';
import { forEachStore } from '../fixtures/stores';

/** Every route the admin API serves, with a body that would be valid if authorised. */
const ROUTES: [string, string, unknown?][] = [
  ['POST', '/_admin/v1/keys', { name: 'x' }],
  ['GET', '/_admin/v1/keys'],
  ['GET', '/_admin/v1/keys/key_x'],
  ['POST', '/_admin/v1/keys/key_x/revoke', {}],
  ['POST', '/_admin/v1/keys/key_x/rotate', {}],
  ['POST', '/_admin/v1/keys/key_x/lift', { limit: { count: 1, window_seconds: 1 }, for_seconds: 1 }],
  ['PUT', '/_admin/v1/keys/key_x/wallet', { wallet: '11111111111111111111111111111111' }],
  ['DELETE', '/_admin/v1/keys/key_x/wallet'],
  ['GET', '/_admin/v1/flags'],
  ['GET', '/_admin/v1/flags/beta_gate_enabled'],
  ['PUT', '/_admin/v1/flags/beta_gate_enabled', { value: true }],
  ['POST', '/_admin/v1/endpoints', { id: 'echo', upstream: 'http://127.0.0.1:9' }],
  ['GET', '/_admin/v1/endpoints'],
  ['GET', '/_admin/v1/endpoints/echo'],
  ['PATCH', '/_admin/v1/endpoints/echo', { price: 1 }],
  ['DELETE', '/_admin/v1/endpoints/echo'],
  ['GET', '/_admin/v1/changelog'],
  ['POST', '/_admin/v1/changelog', { text: 'hello' }],
  ['GET', '/_admin/v1/audit'],
  ['GET', '/_admin/v1/status'],
  ['POST', '/_admin/v1/sync/wait', { version: 1, timeout_ms: 0 }],
  ['GET', '/_admin/v1/gateways'],
  ['PUT', '/_admin/v1/gateways/gw-x/weight', { weight: 2 }],
  ['GET', '/_admin/v1/operators'],
  ['POST', '/_admin/v1/operators', { name: 'x', scopes: ['read'] }],
  ['GET', '/_admin/v1/operators/x'],
  ['POST', '/_admin/v1/operators/x/rotate', {}],
  ['POST', '/_admin/v1/operators/x/revoke', {}],
  // Unknown routes are refused the same way: no token, no map of the API.
  ['GET', '/_admin/v1/nope'],
  ['GET', '/_admin/'],
];

async function send(control: TestControl, method: string, path: string, body: unknown, authorization: string | null) {
  return control.request(control.urls.control + path, {
    method,
    headers: {
      ...(authorization === null ? {} : { authorization }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

forEachStore(t, (t, kind) => {
  t.test('every route without a valid token → 401 problem', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const wrong = 'svc_admin_' + 'x'.repeat(44);
    const credentials: [string, string | null][] = [
      ['no Authorization', null],
      ['wrong token', `Bearer ${wrong}`],
      ['the sync token', `Bearer ${control.syncToken}`],
      ['Basic scheme', `Basic ${Buffer.from(`admin:${control.adminToken}`).toString('base64')}`],
      ['right token, wrong scheme', `Token ${control.adminToken}`],
      ['right token, no scheme', control.adminToken],
      ['Bearer without a token', 'Bearer'],
      ['Bearer with two words', `Bearer ${control.adminToken} extra`],
      ['right token with a suffix', `Bearer ${control.adminToken}x`],
      ['a prefix of the right token', `Bearer ${control.adminToken.slice(0, -1)}`],
      ['an operator-shaped token nobody holds', `Bearer svc_op_${'x'.repeat(44)}`],
    ];
    for (const [method, path, body] of ROUTES) {
      for (const [label, authorization] of credentials) {
        const res = await send(control, method, path, body, authorization);
        const where = `${method} ${path} (${label})`;
        t.equal(res.status, 401, `${where}: 401`);
        t.equal(res.headers.get('content-type'), 'application/problem+json', `${where}: problem+json`);
        t.equal(res.body?.code, 'svc_unauthorized', `${where}: code`);
        t.equal(res.body?.status, 401, `${where}: status member`);
        t.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="admin"/, `${where}: WWW-Authenticate`);
        t.notOk(res.text.includes(control.adminToken), `${where}: the admin token is not echoed`);
        t.notOk(res.text.includes(wrong), `${where}: the presented token is not echoed`);
      }
    }

    // None of the refused writes happened.
    const keys = await control.admin('GET', '/_admin/v1/keys');
    t.same(keys.body.keys, [], 'no key was issued');
    const endpoints = await control.admin('GET', '/_admin/v1/endpoints');
    t.same(endpoints.body.endpoints, [], 'no endpoint was added');
    const flag = await control.admin('GET', '/_admin/v1/flags/beta_gate_enabled');
    t.equal(flag.body.value, false, 'the flag was not set');
    const changelog = await control.admin('GET', '/_admin/v1/changelog');
    t.same(changelog.body.entries, [], 'no changelog entry');
    const operators = await control.admin('GET', '/_admin/v1/operators');
    t.same(
      operators.body.operators.map((o: { name: string }) => o.name),
      ['root'],
      'no operator was added',
    );
    const audit = await control.admin('GET', '/_admin/v1/audit');
    t.same(
      audit.body.entries.filter((e: { actor: string }) => e.actor !== 'control'),
      [],
      'no admin action in the audit log',
    );
  });

  t.test('the scheme is case-insensitive and the valid token is accepted on every route', async (t) => {
    const control = await startTestControl(t, { store: kind });
    for (const authorization of [`Bearer ${control.adminToken}`, `bearer ${control.adminToken}`, `BEARER  ${control.adminToken}`]) {
      const res = await send(control, 'GET', '/_admin/v1/status', undefined, authorization);
      t.equal(res.status, 200, JSON.stringify(authorization.replace(control.adminToken, 'TOKEN')));
    }
    for (const [method, path, body] of ROUTES.filter(([, p]) => p.startsWith('/_admin/v1/') && p !== '/_admin/v1/nope')) {
      const res = await send(control, method, path, body, `Bearer ${control.adminToken}`);
      t.not(res.status, 401, `${method} ${path}: authorised`);
    }
  });

  t.test('the admin token does not open the sync API', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const res = await send(
      control,
      'POST',
      '/_sync/v1/ack',
      { gateway_id: 'g', version: 1, sha256: '0'.repeat(64) },
      `Bearer ${control.adminToken}`,
    );
    t.equal(res.status, 401);
    t.equal(res.body?.code, 'svc_unauthorized');
    t.match(res.headers.get('www-authenticate') ?? '', /realm="sync"/);
  });

  t.test('with a valid token: unknown route → 404, wrong method → 405 with Allow', async (t) => {
    const control = await startTestControl(t, { store: kind });
    for (const path of ['/_admin/v1/nope', '/_admin/v2/keys', '/_admin/v1/keys/key_x/explode', '/_admin/']) {
      const res = await control.admin('GET', path);
      t.equal(res.status, 404, `${path}: 404`);
      t.equal(res.headers.get('content-type'), 'application/problem+json');
      t.equal(res.body?.code, 'svc_not_found', `${path}: svc_not_found`);
    }
    const outside = await control.request(control.urls.control + '/elsewhere');
    t.equal(outside.status, 404, 'a path outside the mounts is 404');
    t.equal(outside.body?.code, 'svc_not_found');

    const cases: [string, string, string[]][] = [
      ['DELETE', '/_admin/v1/keys', ['GET', 'POST']],
      ['PUT', '/_admin/v1/status', ['GET']],
      ['POST', '/_admin/v1/keys/key_x', ['GET']],
      ['GET', '/_admin/v1/keys/key_x/revoke', ['POST']],
      ['POST', '/_admin/v1/flags/beta_gate_enabled', ['GET', 'PUT']],
      ['PUT', '/_admin/v1/endpoints/echo', ['DELETE', 'GET', 'PATCH']],
      ['DELETE', '/_admin/v1/audit', ['GET']],
    ];
    for (const [method, path, allowed] of cases) {
      const res = await control.admin(method, path, method === 'GET' || method === 'DELETE' ? undefined : {});
      t.equal(res.status, 405, `${method} ${path}: 405`);
      t.equal(res.headers.get('content-type'), 'application/problem+json');
      t.equal(res.body?.code, 'svc_method_not_allowed', `${method} ${path}: code`);
      const allow = (res.headers.get('allow') ?? '')
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean)
        .sort();
      t.same(allow, allowed, `${method} ${path}: Allow lists ${allowed.join(', ')}`);
    }
  });
});
