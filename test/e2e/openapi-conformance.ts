/**
 * Real answers match the OpenAPI documents. A stack of real processes (control and a gateway
 * from the built CLI, a test upstream) is driven through every documented operation of the
 * public API, the indexer, control's admin/sync/metrics API and the gateway, happy and error
 * paths; every answer received is recorded and checked against its document: the path and
 * status are documented, the content type is listed, the body validates against its schema
 * (Ajv, JSON Schema 2020-12) and every header against its own, required headers present.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DOCUMENT_NAMES } from '../../protocol/openapi';
import { SOLANA_WALLET, agentAnswers, merchantAnswers } from '../fixtures/applications';
import { Conformance, type Recorded } from '../fixtures/openapi';
import { CHROME_UA, SDK_UA } from '../fixtures/public';
import { GENEROUS_LIMITS, recordResponses, request, startStack, waitFor, type HttpResult } from '../fixtures/stack';
import { closedPort, ok, startUpstream } from '../fixtures/upstream';
import { startTeamControl } from '../fixtures/team';

const CURL_UA = 'curl/8.5.0';
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch']);

/** The first lines of the sync stream (it never ends by itself), as one recorded answer. */
function streamHead(base: string, path: string, token: string, until: (lines: string[]) => boolean): Promise<Recorded> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        const lines = text.split('\n').slice(0, -1);
        if (until(lines)) {
          req.destroy();
          resolve({ method: 'GET', path, status: res.statusCode ?? 0, headers: res.headers, text: lines.join('\n') });
        }
      });
    });
    req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
    req.setTimeout(10_000, () => req.destroy(new Error('no stream lines within 10 s')));
  });
}

t.test('every listener answers as its OpenAPI document says', async (t) => {
  const recorded = recordResponses();
  const extra: { base: string; res: Recorded }[] = [];
  let twoPersonBase = '';
  const stack = await startStack(t, {
    controlEnv: { ...GENEROUS_LIMITS, SVC_SETTLER_CADENCE_MS: '3600000', SVC_APPLICATIONS_SUBMIT_LIMIT_COUNT: '3' },
  });
  const control = stack.control.url;
  const api = stack.control.urls.api!;
  const indexer = stack.control.urls.indexer!;
  const gw = stack.gateway;
  const up = await startUpstream(t);
  up.on('/base/boom', ok({ status: 500, body: { upstream: 'exploded' } }));
  up.on('/base/hang', { kind: 'hang' });
  const get = (base: string, path: string, headers: Record<string, string> = {}) => request(base, path, { method: 'GET', headers });
  const pub = (path: string, headers: Record<string, string> = {}) => get(api, path, { 'user-agent': SDK_UA, ...headers });
  const admin = stack.admin;
  const expect = (res: HttpResult, status: number, what: string) =>
    t.equal(res.status, status, `${what}: ${status}${res.status === status ? '' : ` ${res.text.slice(0, 300)}`}`);

  // --- control: endpoints, keys, flags, changelog -------------------------------------------
  expect(
    await admin('POST', '/_admin/v1/endpoints', {
      id: 'ep',
      upstream: `${up.url}/base`,
      methods: ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      price: 2_000,
      premium: 100,
      sla_ms: 5_000,
      timeout_ms: 400,
      headers: { 'X-Api-Key': 'secret' },
    }),
    201,
    'endpoints add',
  );
  expect(await admin('POST', '/_admin/v1/endpoints', { id: 'ep', upstream: `${up.url}/base` }), 409, 'endpoints add again');
  expect(
    await admin('POST', '/_admin/v1/endpoints', { id: 'down', upstream: `http://127.0.0.1:${await closedPort()}/` }),
    201,
    'endpoints add (closed port)',
  );
  expect(await admin('POST', '/_admin/v1/endpoints', { id: 'gone', upstream: `${up.url}/gone` }), 201, 'endpoints add (to remove)');
  expect(await admin('GET', '/_admin/v1/endpoints'), 200, 'endpoints list');
  expect(await admin('GET', '/_admin/v1/endpoints/ep'), 200, 'endpoints show');
  expect(await admin('GET', '/_admin/v1/endpoints/nope'), 404, 'endpoints show unknown');
  expect(await admin('PATCH', '/_admin/v1/endpoints/ep', { sla_ms: 4_000 }), 200, 'endpoints update');
  expect(await admin('PATCH', '/_admin/v1/endpoints/ep', { sla_ms: 'fast' }), 400, 'endpoints update invalid');
  expect(await admin('DELETE', '/_admin/v1/endpoints/gone'), 200, 'endpoints remove');

  const issued = await admin('POST', '/_admin/v1/keys', { name: 'agent', wallet: SOLANA_WALLET, endpoints: ['ep', 'down'] });
  expect(issued, 201, 'keys issue');
  const key = issued.body as { id: string; key: string };
  const limited = await admin('POST', '/_admin/v1/keys', { name: 'slow agent', limit: { count: 1, window_seconds: 3600 } });
  expect(limited, 201, 'keys issue (limited)');
  const other = await admin('POST', '/_admin/v1/keys', { name: 'other', endpoints: ['down'] });
  expect(other, 201, 'keys issue (other endpoint)');
  expect(await admin('GET', '/_admin/v1/keys?limit=2'), 200, 'keys list');
  expect(await admin('GET', '/_admin/v1/keys?limit=zero'), 400, 'keys list invalid');
  expect(await admin('GET', `/_admin/v1/keys/${key.id}`), 200, 'keys show');
  expect(await admin('GET', '/_admin/v1/keys/key_nope'), 404, 'keys show unknown');
  expect(await admin('POST', '/_admin/v1/accounts', { name: 'team', low: 1000 }), 201, 'accounts add');
  expect(await admin('POST', '/_admin/v1/accounts', { name: 'team' }), 409, 'accounts add taken');
  expect(await admin('POST', '/_admin/v1/accounts', { name: 'bad name' }), 400, 'accounts add invalid');
  expect(await admin('POST', '/_admin/v1/keys', { name: 'shared', account: 'team' }), 201, 'keys issue into an account');
  expect(await admin('GET', '/_admin/v1/accounts?limit=1'), 200, 'accounts list');
  expect(await admin('GET', '/_admin/v1/accounts/team'), 200, 'accounts show');
  expect(await admin('GET', '/_admin/v1/accounts/nobody'), 404, 'accounts show unknown');
  expect(
    await admin('POST', `/_admin/v1/keys/${key.id}/lift`, { limit: { count: 1000, window_seconds: 60 }, for_seconds: 3600 }),
    200,
    'keys lift',
  );
  expect(await admin('POST', '/_admin/v1/accounts', { name: 'acme' }), 201, 'accounts add');
  expect(await admin('POST', '/_admin/v1/accounts', { name: 'acme' }), 409, 'accounts add again');
  expect(await admin('GET', '/_admin/v1/accounts?limit=2'), 200, 'accounts list');
  expect(await admin('GET', '/_admin/v1/accounts/acme'), 200, 'accounts show');
  expect(await admin('GET', '/_admin/v1/accounts/nobody'), 404, 'accounts show unknown');
  expect(await admin('POST', '/_admin/v1/accounts/acme/deposit', { amount: 5_000, reference: 'inv-1' }), 201, 'accounts deposit');
  expect(await admin('POST', '/_admin/v1/accounts/acme/deposit', { amount: 5_000, reference: 'inv-1' }), 200, 'accounts deposit again');
  expect(
    await admin('POST', '/_admin/v1/accounts/acme/deposit', { amount: 1, reference: 'inv-1' }),
    409,
    'accounts deposit, reference used',
  );
  expect(await admin('POST', '/_admin/v1/accounts/acme/deposit', { amount: 0, reference: 'inv-2' }), 400, 'accounts deposit invalid');
  expect(await admin('PUT', '/_admin/v1/accounts/acme/refill', { amount: 9_000, every: 'month', day: 31 }), 200, 'accounts refill');
  expect(await admin('PUT', '/_admin/v1/accounts/acme/refill', { amount: 9_000, every: 'day', day: 3 }), 400, 'accounts refill invalid');
  expect(await admin('DELETE', '/_admin/v1/accounts/acme/refill'), 200, 'accounts refill never');
  expect(await admin('PATCH', '/_admin/v1/accounts/acme', { low: 2_000 }), 200, 'accounts low');
  expect(await admin('PATCH', '/_admin/v1/accounts/acme', { low: -1 }), 400, 'accounts low invalid');
  expect(await admin('PUT', '/_admin/v1/accounts/acme/wallet', { wallet: SOLANA_WALLET }), 200, 'accounts wallet');
  expect(await admin('DELETE', '/_admin/v1/accounts/acme/wallet'), 200, 'accounts wallet detach');
  expect(await admin('PUT', `/_admin/v1/keys/${key.id}/wallet`, { wallet: SOLANA_WALLET }), 200, 'keys wallet');
  expect(await admin('DELETE', `/_admin/v1/keys/${other.body.id}/wallet`), 200, 'keys wallet detach');
  const rotated = await admin('POST', `/_admin/v1/keys/${other.body.id}/rotate`, { grace_seconds: 0 });
  expect(rotated, 200, 'keys rotate');
  expect(await admin('POST', `/_admin/v1/keys/${other.body.id}/revoke`), 200, 'keys revoke');
  expect(await admin('POST', `/_admin/v1/keys/${other.body.id}/rotate`, {}), 409, 'keys rotate revoked');

  expect(await admin('GET', '/_admin/v1/flags'), 200, 'flags list');
  expect(await admin('GET', '/_admin/v1/flags/system_flags.beta_gate_enabled'), 200, 'flag get');
  expect(await admin('GET', '/_admin/v1/flags/nope'), 404, 'flag get unknown');
  expect(await admin('POST', '/_admin/v1/changelog', { text: 'Conformance run' }), 201, 'changelog add');
  expect(await admin('GET', '/_admin/v1/changelog?limit=5'), 200, 'changelog list');
  expect(await admin('GET', '/_admin/v1/audit?limit=5'), 200, 'audit list');
  const operator = await admin('POST', '/_admin/v1/operators', { name: 'conformance', scopes: ['read', 'keys'] });
  expect(operator, 201, 'operators add');
  expect(await admin('POST', '/_admin/v1/operators', { name: 'conformance', scopes: ['read'] }), 409, 'operators add again');
  expect(await admin('POST', '/_admin/v1/operators', { name: 'root', scopes: ['read'] }), 400, 'operators add root');
  expect(await admin('GET', '/_admin/v1/operators'), 200, 'operators list');
  expect(await admin('GET', '/_admin/v1/operators/conformance'), 200, 'operators show');
  expect(await admin('GET', '/_admin/v1/operators/nobody'), 404, 'operators show unknown');
  expect(
    await request(control, '/_admin/v1/flags/maintenance_mode', {
      method: 'PUT',
      headers: { authorization: `Bearer ${operator.body.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ value: true }),
    }),
    403,
    'a scope the operator lacks',
  );
  expect(await admin('POST', '/_admin/v1/operators/conformance/rotate', { grace_seconds: 60 }), 200, 'operators rotate');
  expect(await admin('POST', '/_admin/v1/operators/conformance/revoke'), 200, 'operators revoke');
  expect(await admin('POST', '/_admin/v1/operators/root/revoke'), 409, 'operators revoke root, never revoked');
  expect(await admin('GET', '/_admin/v1/audit?operator=root&action=operators&limit=1'), 200, 'audit list, filtered');
  expect(await admin('GET', '/_admin/v1/status'), 200, 'status');
  expect(await admin('GET', '/_admin/v1/gateways'), 200, 'gateways');
  expect(await admin('PUT', `/_admin/v1/gateways/${stack.gatewayIds[0]}/weight`, { weight: 1 }), 200, 'gateway weight');
  expect(await admin('PUT', '/_admin/v1/gateways/gw-nobody/weight', { weight: 2 }), 404, 'gateway weight unknown');
  expect(await admin('GET', '/_admin/v1/openapi.json'), 200, 'openapi');
  expect(await request(control, '/_admin/v1/status', { method: 'GET' }), 401, 'status without a token');
  expect(
    await request(control, '/_admin/v1/keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.adminToken()}`, 'content-type': 'application/json' },
      body: '{',
    }),
    400,
    'invalid JSON',
  );
  const version = await stack.setFlag('beta_gate_enabled', true);
  expect(await admin('POST', '/_admin/v1/sync/wait', { version, timeout_ms: 10_000 }), 200, 'sync wait');
  await stack.applied(version);

  // --- gateway ------------------------------------------------------------------------------
  // A funded pool covers the calls below, so their failures are refunded (and payouts owed).
  expect(await admin('POST', '/_admin/v1/pool/fund', { amount: 1_000_000, note: 'cover' }), 201, 'pool fund, before the calls');
  const bearer = { authorization: `Bearer ${key.key}` };
  expect(await request(gw, '/v1/ep/x', { body: '{}' }), 403, 'gate: no key');
  for (const method of ['POST', 'GET', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']) {
    const body = method === 'POST' || method === 'PUT' || method === 'PATCH' ? { body: '{}' } : {};
    expect(await request(gw, '/v1/ep/items?x=1', { method, headers: bearer, ...body }), 200, `${method} /v1/ep/…`);
    expect(await request(gw, '/ep/items', { method, headers: bearer, ...body }), 200, `${method} /ep/…`);
  }
  expect(await request(gw, '/v1/ep/boom', { headers: bearer, body: '{}' }), 500, 'upstream 500 passed through');
  expect(await request(gw, '/v1/ep/hang', { headers: bearer, body: '{}' }), 504, 'upstream timeout');
  expect(await request(gw, '/v1/down/x', { headers: bearer, body: '{}' }), 502, 'upstream refused');
  expect(await request(gw, '/v1/nope/x', { headers: bearer, body: '{}' }), 404, 'unknown endpoint');
  expect(await request(gw, '/v1/ep/%2e%2e/escape', { headers: bearer, body: '{}' }), 400, 'path escape');
  expect(
    await request(gw, '/v1/ep/x', { method: 'GET', headers: { ...bearer, 'content-length': '2' }, body: '{}' }),
    400,
    'GET with a body',
  );
  const rotatedAuth = { authorization: `Bearer ${(rotated.body as { key: string }).key}` };
  expect(await request(gw, '/v1/down/x', { headers: rotatedAuth, body: '{}' }), 403, 'revoked key');
  const slow = { authorization: `Bearer ${(limited.body as { key: string }).key}` };
  expect(await request(gw, '/ep/x', { headers: slow, body: '{}' }), 200, 'limited key: first call');
  expect(await request(gw, '/ep/x', { headers: slow, body: '{}' }), 429, 'limited key: second call');
  expect(
    await request(gw, '/v1/ep/x', { headers: { ...bearer, 'content-length': String(10 * 1024 * 1024) }, body: '' }),
    413,
    'declared body over the limit',
  );
  const onlyDown = await admin('POST', '/_admin/v1/keys', { name: 'down only', endpoints: ['down'] });
  await stack.applied(onlyDown.body.version);
  expect(
    await request(gw, '/v1/ep/x', { headers: { authorization: `Bearer ${onlyDown.body.key}` }, body: '{}' }),
    403,
    'endpoint not granted',
  );
  expect(await get(gw, '/health'), 200, 'gateway health');
  expect(await get(gw, '/health', { authorization: `Bearer ${stack.metricsToken()}` }), 200, 'gateway health (detail)');
  expect(await get(gw, '/health', { authorization: 'Bearer wrong-token-wrong-token-wrong-token' }), 401, 'gateway health (wrong token)');
  expect(await get(gw, '/metrics', { authorization: `Bearer ${stack.metricsToken()}` }), 200, 'gateway metrics');
  expect(await get(gw, '/metrics'), 401, 'gateway metrics without a token');
  await stack.applied(await stack.setFlag('maintenance_mode', true));
  await waitFor(async () => (await get(gw, '/health')).status === 503, 'gateway in maintenance');
  expect(await request(gw, '/v1/ep/x', { headers: bearer, body: '{}' }), 503, 'maintenance');
  const off = await admin('PUT', '/_admin/v1/flags/maintenance_mode', { value: false });
  expect(off, 200, 'flag set');
  await stack.applied(off.body.version);
  const callIds = recorded.filter((r) => r.base === gw && r.headers['x-svc-call-id']).map((r) => String(r.headers['x-svc-call-id']));
  await waitFor(() => {
    const held = new Set(stack.outcomes().map((o) => o.call_id));
    return callIds.every((id) => held.has(id));
  }, 'every admitted call recorded at control');

  // --- control: settler, money, sync, metrics ----------------------------------------------
  expect(await admin('GET', '/_admin/v1/settler'), 200, 'settler status');
  expect(await admin('POST', '/_admin/v1/settler/pause'), 200, 'settler pause');
  expect(await admin('POST', '/_admin/v1/settler/resume'), 200, 'settler resume');
  expect(await admin('POST', '/_admin/v1/pool/fund', { amount: 1_000_000, note: 'seed' }), 201, 'pool fund');
  // Coverage paused and resumed at once, so the calls settled below are covered.
  expect(await admin('POST', '/_admin/v1/pool/pause', { note: 'checking the books' }), 200, 'pool pause');
  expect(await admin('POST', '/_admin/v1/pool/pause', { note: 'again' }), 200, 'pool pause, already paused');
  expect(await admin('POST', '/_admin/v1/pool/pause', { note: ' ' }), 400, 'pool pause, blank note');
  expect(await admin('POST', '/_admin/v1/pool/resume', { note: 'books checked' }), 200, 'pool resume');
  expect(await admin('POST', '/_admin/v1/settler/run-once'), 200, 'settler run-once');
  // The newest receipt deleted by hand: reissue signs it again (the same rows and key: the same bytes).
  const controlDb = new Database(join(stack.dataDir, 'control.db'));
  controlDb.exec(`DELETE FROM receipts WHERE batch = (SELECT max(batch) FROM receipts)`);
  controlDb.close();
  expect(await admin('POST', '/_admin/v1/receipts/first/reissue'), 400, 'receipts reissue, not a batch number');
  expect(await admin('POST', '/_admin/v1/receipts/999999/reissue'), 404, 'receipts reissue, unknown batch');
  const lost = (await admin('GET', '/_admin/v1/ledger/verify')).body.violation as string;
  t.match(lost, /^batch \d+ has no receipt$/, 'ledger verify names the batch without its receipt');
  const reissue = `/_admin/v1/receipts/${/\d+/.exec(lost)![0]}/reissue`;
  expect(await admin('POST', reissue), 200, 'receipts reissue');
  expect(await admin('POST', reissue), 409, 'receipts reissue, a batch with its receipt');
  expect(await admin('GET', '/_admin/v1/pool'), 200, 'pool show');
  expect(await admin('GET', '/_admin/v1/ledger/verify'), 200, 'ledger verify');
  expect(await admin('GET', '/_admin/v1/ledger/balances?prefix=key:'), 200, 'ledger balances');
  expect(await admin('GET', '/_admin/v1/payouts'), 200, 'payouts list');
  expect(await admin('GET', '/_admin/v1/payouts?wallet=nope'), 400, 'payouts list, bad wallet');
  expect(
    await admin('POST', '/_admin/v1/payouts/mark-paid', { wallet: SOLANA_WALLET, amount: 1, reference: 'tx-1' }),
    201,
    'payouts mark-paid',
  );
  expect(
    await admin('POST', '/_admin/v1/payouts/mark-paid', { wallet: SOLANA_WALLET, amount: 1, reference: 'tx-1' }),
    409,
    'payouts mark-paid twice',
  );
  expect(await admin('POST', '/_admin/v1/receipts/rotate-key'), 200, 'receipts rotate-key');

  // Liquidity providers: a position bought into, a withdrawal queued (72 h notice: still pending) and cancelled.
  expect(await admin('POST', '/_admin/v1/lps', { name: 'fund-a' }), 201, 'lps add');
  expect(await admin('POST', '/_admin/v1/lps', { name: 'fund-a' }), 409, 'lps add taken');
  expect(await admin('POST', '/_admin/v1/lps', { name: 'lp_x' }), 400, 'lps add invalid');
  expect(await admin('POST', '/_admin/v1/lps/fund-a/deposit', { amount: 2_000_000, reference: 'lp-1' }), 201, 'lps deposit');
  expect(await admin('POST', '/_admin/v1/lps/fund-a/deposit', { amount: 2_000_000, reference: 'lp-1' }), 200, 'lps deposit again');
  expect(await admin('POST', '/_admin/v1/lps/fund-a/deposit', { amount: 1, reference: 'lp-1' }), 409, 'lps deposit, reference used');
  expect(await admin('POST', '/_admin/v1/lps/nobody/deposit', { amount: 1, reference: 'lp-2' }), 404, 'lps deposit, unknown provider');
  expect(await admin('GET', '/_admin/v1/lps'), 200, 'lps list');
  expect(await admin('GET', '/_admin/v1/lps/fund-a'), 200, 'lps show');
  expect(await admin('GET', '/_admin/v1/lps/nobody'), 404, 'lps show unknown');
  const lpWithdrawal = await admin('POST', '/_admin/v1/lps/fund-a/withdrawals', { amount: 500_000 });
  expect(lpWithdrawal, 201, 'lps withdraw');
  expect(await admin('POST', '/_admin/v1/lps/fund-a/withdrawals', { amount: 1e12 }), 409, 'lps withdraw, over the position');
  expect(await admin('POST', '/_admin/v1/lps/fund-a/withdrawals', { amount: 1, all: true }), 400, 'lps withdraw, amount and all');
  expect(await admin('GET', '/_admin/v1/lp-withdrawals?pending=true&provider=fund-a'), 200, 'lps withdrawals');
  expect(await admin('GET', '/_admin/v1/lp-withdrawals?provider=nobody'), 404, 'lps withdrawals, unknown provider');
  expect(await admin('POST', `/_admin/v1/lp-withdrawals/${lpWithdrawal.body.id}/cancel`), 200, 'lps cancel');
  expect(await admin('POST', `/_admin/v1/lp-withdrawals/${lpWithdrawal.body.id}/cancel`), 409, 'lps cancel, not pending');
  expect(await admin('POST', '/_admin/v1/lp-withdrawals/999999/cancel'), 404, 'lps cancel unknown');

  // A second control with two people for money: the 202s and the approvals routes, checked against the admin document.
  // Its team is added first: with two people for money, adding a money operator takes two.
  const team = await startTeamControl(
    t,
    { second: ['read', 'money', 'receipts', 'operators'] },
    { dataDir: join(t.testdirName, 'two-person') },
  );
  const two = team.control;
  twoPersonBase = two.urls.control;
  const asTwo = (method: string, path: string, body?: unknown, token = two.adminToken) =>
    request(twoPersonBase, path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const second = team.tokens.second!;
  const minting = await asTwo('POST', '/_admin/v1/operators', { name: 'third', scopes: ['read', 'money'] });
  expect(minting, 202, 'operators add of a money operator, waiting');
  const walletKey = (await asTwo('POST', '/_admin/v1/keys', { name: 'wallet' })).body.id;
  expect(await asTwo('PUT', `/_admin/v1/keys/${walletKey}/wallet`, { wallet: SOLANA_WALLET }), 202, 'keys wallet, waiting');
  expect(await asTwo('DELETE', `/_admin/v1/keys/${walletKey}/wallet`), 202, 'keys wallet detach, waiting');
  const teamAccount = (await asTwo('POST', '/_admin/v1/accounts', { name: 'team' })).body.id;
  expect(
    await asTwo('POST', `/_admin/v1/accounts/${teamAccount}/deposit`, { amount: 1, reference: 'inv-9' }),
    202,
    'accounts deposit, waiting',
  );
  expect(await asTwo('PUT', `/_admin/v1/accounts/${teamAccount}/wallet`, { wallet: SOLANA_WALLET }), 202, 'accounts wallet, waiting');
  expect(await asTwo('DELETE', `/_admin/v1/accounts/${teamAccount}/wallet`), 202, 'accounts wallet detach, waiting');
  expect(await asTwo('POST', `/_admin/v1/approvals/${minting.body.id}/approve`, undefined, second), 200, 'approvals approve (an operator)');
  expect(await asTwo('POST', '/_admin/v1/operators/third/rotate', {}), 202, 'operators rotate of a money operator, waiting');
  expect(await asTwo('POST', '/_admin/v1/lps', { name: 'fund-b' }), 202, 'lps add, waiting');
  expect(await asTwo('POST', '/_admin/v1/lps/operator/deposit', { amount: 1, reference: 'lp-9' }), 202, 'lps deposit, waiting');
  expect(await asTwo('POST', '/_admin/v1/lps/operator/withdrawals', { all: true }), 202, 'lps withdraw, waiting');
  expect(await asTwo('POST', '/_admin/v1/lp-withdrawals/1/cancel'), 202, 'lps cancel, waiting');
  const funding = await asTwo('POST', '/_admin/v1/pool/fund', { amount: 5_000 });
  expect(funding, 202, 'pool fund, waiting for a second operator');
  expect(
    await asTwo('POST', '/_admin/v1/payouts/mark-paid', { wallet: SOLANA_WALLET, amount: 1, reference: 'tx-2' }),
    202,
    'payouts mark-paid, waiting',
  );
  const rotation = await asTwo('POST', '/_admin/v1/receipts/rotate-key');
  expect(rotation, 202, 'receipts rotate-key, waiting');
  expect(await asTwo('GET', '/_admin/v1/approvals?status=pending'), 200, 'approvals list');
  expect(await asTwo('GET', '/_admin/v1/approvals?status=maybe'), 400, 'approvals list, bad status');
  expect(await asTwo('GET', `/_admin/v1/approvals/${funding.body.id}`), 200, 'approvals show');
  expect(await asTwo('GET', '/_admin/v1/approvals/apr_111111111111'), 404, 'approvals show unknown');
  expect(await asTwo('POST', `/_admin/v1/approvals/${funding.body.id}/approve`), 409, 'approvals approve own');
  expect(await asTwo('POST', `/_admin/v1/approvals/${funding.body.id}/approve`, undefined, second), 200, 'approvals approve (a funding)');
  expect(await asTwo('POST', `/_admin/v1/approvals/${rotation.body.id}/approve`, undefined, second), 200, 'approvals approve (a rotation)');
  expect(await asTwo('POST', `/_admin/v1/approvals/${rotation.body.id}/reject`, {}, second), 409, 'approvals reject, decided');
  const payout = (await asTwo('GET', '/_admin/v1/approvals?status=pending')).body.approvals[0].id;
  expect(await asTwo('POST', `/_admin/v1/approvals/${payout}/reject`, { reason: 'not owed' }, second), 200, 'approvals reject');
  const syncToken = readFileSync(join(stack.dataDir, 'sync.token'), 'utf8').trim();
  const syncAuth = { authorization: `Bearer ${syncToken}`, 'content-type': 'application/json' };
  expect(
    await request(control, '/_sync/v1/outcomes', { headers: syncAuth, body: JSON.stringify({ gateway_id: 'gw-x', records: [] }) }),
    200,
    'sync outcomes',
  );
  expect(
    await request(control, '/_sync/v1/ack', { headers: syncAuth, body: JSON.stringify({ gateway_id: 'gw-x', version: 1, ok: true }) }),
    200,
    'sync ack',
  );
  expect(
    await request(control, '/_sync/v1/ack', { headers: syncAuth, body: JSON.stringify({ gateway_id: 'gw-x', version: 1e9, ok: true }) }),
    409,
    'sync ack of a future version',
  );
  expect(await request(control, '/_sync/v1/ack', { headers: syncAuth, body: JSON.stringify({ version: 1 }) }), 400, 'sync ack invalid');
  expect(
    await request(control, '/_sync/v1/budgets', {
      headers: syncAuth,
      body: JSON.stringify({ gateway_id: 'gw-x', instance: 'gw-x-1', want: [{ account: 'acc_none', need: 100 }], drained: true }),
    }),
    200,
    'sync budgets',
  );
  expect(
    await request(control, '/_sync/v1/budgets', { headers: syncAuth, body: JSON.stringify({ gateway_id: 'gw-x' }) }),
    400,
    'sync budgets invalid',
  );
  const stream = await streamHead(control, '/_sync/v1/stream?gateway_id=gw-x&version=0', syncToken, (lines) =>
    lines.some((l) => l.includes('"snapshot_end"')),
  );
  t.equal(stream.status, 200, 'sync stream: 200');
  extra.push({ base: control, res: stream });
  expect(await get(control, '/metrics', { authorization: `Bearer ${stack.metricsToken()}` }), 200, 'control metrics');

  // --- applications (public form and admin review) -----------------------------------------
  const json = { 'user-agent': SDK_UA, 'content-type': 'application/json' };
  const submitted = await request(api, '/api/v1/applications', { headers: json, body: JSON.stringify(agentAnswers()) });
  expect(submitted, 201, 'application submit');
  expect(
    await request(api, '/api/v1/applications', { headers: json, body: JSON.stringify(agentAnswers()) }),
    200,
    'application submit again',
  );
  expect(
    await request(api, '/api/v1/applications', { headers: json, body: JSON.stringify({ applicant_type: 'ai_agent' }) }),
    400,
    'application invalid',
  );
  const form = { 'user-agent': SDK_UA, 'content-type': 'application/x-www-form-urlencoded' };
  const formBody = new URLSearchParams(merchantAnswers() as Record<string, string>).toString();
  expect(await request(api, '/apply', { headers: form, body: 'applicant_type=ai_agent' }), 400, 'form invalid');
  expect(await request(api, '/apply', { headers: form, body: formBody }), 303, 'form submit');
  // Three stored submissions (the duplicate counts) use up this address's limit of 3.
  expect(
    await request(api, '/api/v1/applications', { headers: json, body: JSON.stringify(merchantAnswers({ contact_name: 'Fourth' })) }),
    429,
    'application over the limit',
  );
  expect(await request(api, '/apply', { headers: form, body: formBody }), 429, 'form over the limit');
  expect(await pub('/apply'), 200, 'form');
  expect(await pub(`/apply/thanks?id=${submitted.body.id}`), 200, 'thanks page');
  const added = await admin('POST', '/_admin/v1/applications', { application: merchantAnswers({ contact_name: 'Direct Contact' }) });
  expect(added, 201, 'applications add');
  expect(
    await admin('POST', '/_admin/v1/applications', { application: merchantAnswers({ contact_name: 'Direct Contact' }) }),
    200,
    'applications add again',
  );
  expect(await admin('GET', '/_admin/v1/applications?status=pending'), 200, 'applications list');
  expect(await admin('GET', `/_admin/v1/applications/${submitted.body.id}`), 200, 'applications show');
  expect(await admin('GET', '/_admin/v1/applications/app_nope'), 404, 'applications show unknown');
  expect(await admin('POST', `/_admin/v1/applications/${submitted.body.id}/approve`, { endpoints: ['ep'] }), 200, 'applications approve');
  expect(await admin('POST', `/_admin/v1/applications/${submitted.body.id}/approve`, {}), 409, 'applications approve twice');
  expect(await admin('POST', `/_admin/v1/applications/${submitted.body.id}/redeliver`, {}), 200, 'applications redeliver');
  expect(
    await admin('POST', `/_admin/v1/applications/${added.body.application.id}/reject`, { reason: 'not now' }),
    200,
    'applications reject',
  );

  // --- public reads and the indexer ---------------------------------------------------------
  const providerId = String((await pub('/api/v1/providers')).body.providers[0].id);
  const pages = [
    '/status',
    '/providers',
    '/providers?sort=failure_rate&order=desc',
    `/providers/${providerId}`,
    '/changelog.atom',
    '/status.atom',
  ];
  for (const path of ['/health', '/openapi.json', '/api/v1/providers', '/api/v1/status', '/api/v1/changelog?limit=3', ...pages]) {
    const res = await pub(path);
    expect(res, 200, `public ${path}`);
    if (res.headers.etag) expect(await pub(path, { 'if-none-match': String(res.headers.etag) }), 304, `public ${path} again`);
  }
  const browser = { 'user-agent': CHROME_UA, accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
  const home = await get(api, '/', browser);
  expect(home, 200, 'landing page, a browser');
  expect(await get(api, '/', { ...browser, 'if-none-match': String(home.headers.etag) }), 304, 'landing page again');
  expect(await pub('/'), 404, 'public /, the SDK');
  expect(await get(indexer, '/', browser), 302, 'indexer /, a browser');
  expect(await get(indexer, '/', { accept: 'application/json' }), 404, 'indexer /, JSON');
  for (const path of ['/changelog.atom', '/status.atom']) {
    const feed = await get(indexer, path);
    expect(feed, 200, `indexer ${path}`);
    expect(await get(indexer, path, { 'if-none-match': String(feed.headers.etag) }), 304, `indexer ${path} again`);
  }
  expect(await pub('/providers?sort=upstream'), 400, 'providers page, unknown order');
  expect(await pub('/providers/prv_nope'), 404, 'provider page, unknown provider');
  expect(await pub('/favicon.ico'), 204, 'public favicon');
  expect(await get(indexer, '/favicon.ico'), 204, 'indexer favicon');
  expect(await pub('/api/v1/changelog?limit=0'), 400, 'public changelog, bad limit');
  const account = await pub('/api/v1/account?window=7d', bearer);
  expect(account, 200, 'account');
  expect(await pub('/api/v1/account?window=7d', { ...bearer, 'if-none-match': String(account.headers.etag) }), 304, 'account again');
  expect(await pub('/api/v1/account'), 401, 'account without a key');
  expect(await pub('/api/v1/account?window=1y', bearer), 400, 'account, bad window');
  const accountCalls = await pub('/api/v1/account/calls?limit=2', bearer);
  expect(accountCalls, 200, 'account calls');
  t.ok(accountCalls.body.calls.length > 0, 'the key has calls');
  expect(await pub('/api/v1/account/calls', { authorization: 'Bearer svc_beta_nope' }), 401, 'account calls, unknown key');
  expect(await get(api, '/api/v1/providers', { 'user-agent': CURL_UA }), 403, 'public read from curl');
  expect(await get(indexer, '/health'), 200, 'indexer health');
  expect(await get(indexer, '/openapi.json'), 200, 'indexer openapi');
  const stats = await get(indexer, '/api/stats');
  expect(stats, 200, 'indexer stats');
  t.ok(stats.body.recent_activity.length > 0, 'stats list settled calls');
  expect(await get(indexer, '/api/stats', { 'if-none-match': String(stats.headers.etag) }), 304, 'indexer stats again');
  expect(await get(indexer, '/api/activity?limit=3'), 200, 'indexer activity');
  expect(await get(indexer, '/api/activity?before=nope'), 400, 'indexer activity, bad cursor');
  const activityPage = await get(indexer, '/activity');
  expect(activityPage, 200, 'activity page');
  expect(await get(indexer, '/activity', { 'if-none-match': String(activityPage.headers.etag) }), 304, 'activity page again');
  expect(await get(indexer, '/activity?before=nope'), 400, 'activity page, bad cursor');
  expect(await get(indexer, '/api/receipts/keys'), 200, 'receipt keys');
  const receipts = await get(indexer, '/api/receipts?limit=2');
  expect(receipts, 200, 'receipts');
  const batch = receipts.body.receipts[0]?.batch as number;
  expect(await get(indexer, `/api/receipts/${batch}`), 200, 'receipt');
  expect(await get(indexer, '/api/receipts/999999'), 404, 'receipt unknown');
  const checkpoint = await get(indexer, '/api/receipts/checkpoint');
  expect(checkpoint, 200, 'receipts checkpoint');
  expect(await get(indexer, `/api/receipts/consistency?from=${batch}&to=${checkpoint.body.batch}`), 200, 'receipts consistency');
  expect(await get(indexer, '/api/receipts/consistency?from=2&to=1'), 400, 'receipts consistency, from after to');
  expect(await get(indexer, '/api/receipts/consistency?from=999998&to=999999'), 404, 'receipts consistency, unknown batches');
  const receiptsFeed = await get(indexer, '/receipts.atom');
  expect(receiptsFeed, 200, 'receipts feed');
  expect(await get(indexer, '/receipts.atom', { 'if-none-match': String(receiptsFeed.headers.etag) }), 304, 'receipts feed again');
  const settledCall = stack.outcomes().find((o) => o.endpoint_id === 'ep' && o.outcome === 'ok')!;
  expect(await get(indexer, `/api/calls/${settledCall.call_id}/proof`), 200, 'call proof');
  expect(await get(indexer, '/api/calls/0190a0a0-0000-7000-8000-000000000000/proof'), 404, 'call proof unknown');
  const late = await request(gw, '/v1/ep/late', { headers: bearer, body: '{}' });
  expect(late, 200, 'one more call');
  const lateId = String(late.headers['x-svc-call-id']);
  await waitFor(() => stack.outcomes().some((o) => o.call_id === lateId), 'the late call at control');
  expect(await get(indexer, `/api/calls/${lateId}/proof`), 409, 'call proof before settlement');

  // --- every answer against its document -----------------------------------------------------
  const docs = new Map<string, Conformance>([
    [control, new Conformance('admin')],
    [api, new Conformance('public')],
    [indexer, new Conformance('indexer')],
    [gw, new Conformance('gateway')],
  ]);
  // The two-person control's answers are the admin document's too.
  const answers = [...recorded.map((r) => ({ base: r.base === twoPersonBase ? control : r.base, res: r })), ...extra];
  t.ok(answers.length > 100, `${answers.length} answers recorded`);
  for (const [base, conformance] of docs)
    conformance.check(
      t,
      answers.filter((a) => a.base === base).map((a) => a.res),
    );

  // Each documented operation was exercised with a success answer (so each answer schema met a real body).
  for (const conformance of docs.values()) {
    for (const [path, item] of Object.entries(conformance.doc.paths)) {
      for (const method of Object.keys(item).filter((m) => METHODS.has(m))) {
        const hit = [...conformance.seen].some((s) => {
          const [m, p, status] = s.split(' ');
          return m === method.toUpperCase() && p === path && Number(status) < 400;
        });
        t.ok(hit, `${conformance.name}: ${method.toUpperCase()} ${path} answered with success at least once`);
      }
    }
  }
  t.same([...docs.values()].map((c) => c.name).sort(), [...DOCUMENT_NAMES].sort(), 'all four documents checked');
});
