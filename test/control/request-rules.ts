/**
 * The request rules every control listener's router applies (admin + sync, public api,
 * indexer), before any handler runs:
 *
 * - a query parameter given twice is 400 `svc_bad_request` naming it (it silently took the
 *   last value);
 * - a JSON route refuses a parameter it does not read, naming it (the indexer and the public
 *   API ignored them), while HTML pages, feeds and `/metrics` ignore them (shared links carry
 *   tracking parameters);
 * - a batch number in a path has one form: `/api/receipts/01` is 400 like `/api/receipts/1.0`;
 * - a dot segment (`.`, `..`, any `%2e` spelling) is 400, never resolved (the indexer answered
 *   `/api/calls/%2e%2e/proof` as `/api/proof`, and `/api/x/%2e%2e/stats` as `/api/stats`), and
 *   `//x/api/stats` is not `/api/stats` on host `x`.
 *
 * Every request goes out twice: the public listeners remember exact paths they routed, and
 * the second request takes that shortcut.
 */
import t, { type Test } from 'tap';
import { startTestControl, type TestControl } from '../fixtures/control';
import { SDK_UA } from '../fixtures/public';
import { request, type HttpResult } from '../fixtures/stack';

type Listener = 'control' | 'api' | 'indexer';

/** GET `path` on a listener as sent (node:http leaves dot segments alone; fetch would resolve them), twice. */
async function getTwice(control: TestControl, on: Listener, path: string, token?: string): Promise<HttpResult[]> {
  const headers: Record<string, string> = { 'user-agent': SDK_UA };
  const bearer = token ?? (on === 'control' ? control.adminToken : undefined);
  if (bearer !== undefined) headers.authorization = `Bearer ${bearer}`;
  const answers: HttpResult[] = [];
  for (let i = 0; i < 2; i++) answers.push(await request(control.urls[on], path, { method: 'GET', headers, timeoutMs: 5_000 }));
  return answers;
}

/** Both answers are 400 `svc_bad_request`, naming exactly `fields` in `errors` when given. */
async function refused(t: Test, control: TestControl, on: Listener, path: string, fields?: string[], token?: string): Promise<void> {
  for (const [i, res] of (await getTwice(control, on, path, token)).entries()) {
    const what = `${on} ${path}${i === 1 ? ' (again)' : ''}`;
    t.equal(res.status, 400, `${what}: 400`);
    t.match(String(res.headers['content-type']), /^application\/problem\+json/, `${what}: problem+json`);
    t.equal(res.body?.code, 'svc_bad_request', `${what}: svc_bad_request`);
    if (fields !== undefined) {
      t.same(
        (res.body?.errors ?? []).map((e: { field: string }) => e.field),
        fields,
        `${what}: names ${fields.join(', ')}`,
      );
      for (const field of fields) t.match(res.body?.detail, field, `${what}: the detail names ${field}`);
    }
  }
}

async function served(t: Test, control: TestControl, on: Listener, path: string, status = 200, token?: string): Promise<void> {
  for (const [i, res] of (await getTwice(control, on, path, token)).entries()) {
    t.equal(res.status, status, `${on} ${path}${i === 1 ? ' (again)' : ''}: ${status}`);
  }
}

t.test('a query parameter given twice is 400 naming it, on every listener', async (t) => {
  const control = await startTestControl(t);
  await refused(t, control, 'control', '/_admin/v1/keys?limit=10&limit=20', ['limit']);
  await refused(t, control, 'control', '/_admin/v1/changelog?limit=1&limit=1', ['limit']);
  await refused(t, control, 'control', '/_admin/v1/applications?overdue=1&testers=1&overdue=0', ['overdue']);
  await refused(t, control, 'indexer', '/api/receipts?after=1&after=2', ['after']);
  await refused(t, control, 'indexer', '/api/activity?limit=5&before=x&limit=6', ['limit']);
  await refused(t, control, 'api', '/api/v1/changelog?limit=2&limit=3', ['limit']);
  // A page reads its own parameters the same way: which of two orders would it show?
  await refused(t, control, 'api', '/providers?sort=tier&sort=failure_rate', ['sort']);
  // Given once, each is served.
  await served(t, control, 'control', '/_admin/v1/keys?limit=10');
  await served(t, control, 'indexer', '/api/receipts?after=1&limit=5');
  await served(t, control, 'api', '/api/v1/changelog?limit=2');
  await served(t, control, 'api', '/providers?sort=tier&order=desc');
  // Last: were it served, this would be a stream that does not end (until the request gives up).
  const stream = '/_sync/v1/stream?gateway_id=a&gateway_id=b&version=0&engine=undici';
  await refused(t, control, 'control', stream, ['gateway_id'], control.syncToken);
});

t.test('a JSON route refuses a parameter it does not read; pages, feeds and metrics ignore it', async (t) => {
  const control = await startTestControl(t);
  await refused(t, control, 'indexer', '/api/receipts?bogus=1', ['bogus']);
  await refused(t, control, 'indexer', '/api/receipts?after=0&bogus=1&Limit=2', ['bogus', 'Limit']);
  await refused(t, control, 'indexer', '/api/stats?utm_source=x', ['utm_source']);
  await refused(t, control, 'indexer', '/api/receipts/keys?x=', ['x']);
  await refused(t, control, 'indexer', '/health?x=1', ['x']);
  await refused(t, control, 'api', '/api/v1/providers?verbose=1', ['verbose']);
  await refused(t, control, 'api', '/api/v1/changelog?limt=5', ['limt']);
  await refused(t, control, 'api', '/openapi.json?v=2', ['v']);
  await refused(t, control, 'control', '/_admin/v1/status?x=1', ['x']);
  await refused(t, control, 'control', '/_admin/v1/changelog?lmit=5', ['lmit']);
  await refused(t, control, 'control', '/_admin/v1/audit?limit=5&actor=me', ['actor']);
  await refused(t, control, 'control', '/_admin/v1/payouts?walet=x', ['walet']);
  // A key pasted into a parameter name is not echoed back.
  const key = `svc_beta_${'A'.repeat(32)}`;
  const [echo] = await getTwice(control, 'control', `/_admin/v1/status?${key}=1`);
  t.equal(echo?.status, 400);
  t.notMatch(echo?.text, key, 'the key is cut to its stub in the answer');

  const tracking = 'utm_source=newsletter&utm_source=again&fbclid=abc';
  await served(t, control, 'api', `/providers?${tracking}`);
  await served(t, control, 'api', `/providers?sort=failure_rate&${tracking}`);
  await served(t, control, 'api', `/status?${tracking}`);
  await served(t, control, 'api', `/changelog.atom?${tracking}`);
  await served(t, control, 'api', `/apply?${tracking}`);
  await served(t, control, 'api', `/favicon.ico?${tracking}`, 204);
  await served(t, control, 'indexer', `/activity?${tracking}`);
  await served(t, control, 'control', `/metrics?${tracking}`, 200, control.handle.bootstrap.metricsToken.token!);
});

t.test('a batch number in a path has one form: no leading zeros', async (t) => {
  const control = await startTestControl(t);
  for (const batch of ['01', '00', '007', '1.0', '+1', '-1', '1e3', '0x1'])
    await refused(t, control, 'indexer', `/api/receipts/${batch}`, ['batch']);
  await refused(t, control, 'indexer', '/api/receipts?after=01', ['after']);
  for (const batch of ['0', '1', '10', '999999999999999']) {
    const [res] = await getTwice(control, 'indexer', `/api/receipts/${batch}`);
    t.equal(res?.status, 404, `/api/receipts/${batch}: a batch number, with no receipt yet: 404`);
    t.equal(res?.body?.code, 'svc_not_found');
  }
  await served(t, control, 'indexer', '/api/receipts?after=0');
  await served(t, control, 'indexer', '/api/receipts?after=10');
});

t.test('a dot segment is 400 on every listener, never resolved', async (t) => {
  const control = await startTestControl(t);
  const dotdot = ['..', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '%2E.', '.%2E'];
  const dot = ['.', '%2e', '%2E'];
  // Each path would resolve to a route that answers 200.
  const cases: [Listener, (seg: string) => string, (seg: string) => string][] = [
    ['indexer', (s) => `/api/x/${s}/stats`, (s) => `/api/${s}/stats`],
    ['api', (s) => `/api/v1/x/${s}/providers`, (s) => `/api/v1/${s}/providers`],
    ['control', (s) => `/_admin/v1/x/${s}/status`, (s) => `/_admin/v1/${s}/status`],
  ];
  for (const [on, twoDots, oneDot] of cases) {
    for (const seg of dotdot) await refused(t, control, on, twoDots(seg));
    for (const seg of dot) await refused(t, control, on, oneDot(seg));
  }
  await refused(t, control, 'indexer', '/api/calls/%2e%2e/proof');
  await refused(t, control, 'indexer', '/api/receipts/..');
  await refused(t, control, 'indexer', '/api/receipts/%2e');
  // Out of one mount into another: the sync token does not open the admin API, and neither does a path.
  await refused(t, control, 'control', '/_sync/%2e%2e/_admin/v1/status', undefined, control.syncToken);
  await refused(t, control, 'control', '/_sync/v1/%2e%2e/%2e%2e/_admin/v1/keys', undefined, control.syncToken);

  // Nor is a leading `//` read as a host name in front of the path.
  await served(t, control, 'indexer', '//x/api/stats', 404);
  await served(t, control, 'control', '//x/_admin/v1/status', 404);

  // Dots inside a segment are just characters.
  await served(t, control, 'indexer', '/api/calls/a..b/proof', 404);
  await served(t, control, 'indexer', '/api/calls/.../proof', 404);
  await served(t, control, 'indexer', '/api/stats');
});
