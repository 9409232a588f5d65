/**
 * `svcctl up --sample` as a real process: the banner names the sample provider and where the
 * admin token is; the sample is the endpoint `sample`, labelled as a sample, callable through
 * the gateway at once (`/ok` 200, `/fail` 500 `server_error`, `/slow?ms=` late, `/reset` a
 * `network_error`); a second start points it at its new port; an endpoint named `sample` that
 * is not the sample makes `up --sample` exit 1 and is left as it was.
 */
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SAMPLE_DISPLAY_NAME, slowMs } from '../../cli/sample';
import { startUp } from '../fixtures/cli';
import { controlListenArgs, request, testdirAfterTeardowns, WAIT_LIMIT_MS, waitFor } from '../fixtures/stack';

const sampleUp = (t: Test, dataDir: string) =>
  startUp(t, ['--sample', '--data-dir', dataDir, ...controlListenArgs(), '--gateway-port', '0']);

const line = (stdout: string, label: string) => new RegExp(`^\\s*${label}\\s+(\\S+)`, 'm').exec(stdout)?.[1];

t.test('the slow parameter', async (t) => {
  t.equal(slowMs(null), 1_000, 'a second by default');
  t.equal(slowMs('0'), 0);
  t.equal(slowMs('10000'), 10_000);
  for (const bad of ['10001', '-1', '1.5', 'abc', '', '123456']) t.equal(slowMs(bad), null, `${JSON.stringify(bad)} refused`);
});

t.test('svcctl up --sample: a provider to call on a fresh install', async (t) => {
  const dataDir = join(testdirAfterTeardowns(t), 'data');
  const up = sampleUp(t, dataDir);
  await waitFor(
    () => /Press Ctrl-C to stop\./.test(up.stdout()) || up.stderr().includes('exited'),
    '`up` to print its banner',
    WAIT_LIMIT_MS * 2,
  );
  const out = up.stdout();
  const gateway = line(out, 'gateway \\(\\{market_url\\}\\)')!;
  const control = line(out, 'control admin \\+ sync')!;
  t.ok(gateway, `the gateway URL (stdout: ${out}, stderr: ${up.stderr()})`);
  t.equal(line(out, 'admin token'), join(dataDir, 'admin.token'), 'where the admin token is');
  t.equal(line(out, 'sample provider'), `${gateway}/v1/sample/ok`, 'the first call to make');
  t.match(out, /Run svcctl in a second terminal/);

  const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  const adminOf = (base: string) => (method: string, path: string, body?: unknown) =>
    request(base, path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const admin = adminOf(control);
  const endpoint = (await admin('GET', '/_admin/v1/endpoints/sample')).body;
  t.match(endpoint, {
    id: 'sample',
    display_name: SAMPLE_DISPLAY_NAME,
    price: 1_000,
    premium: 100,
    sla_ms: 500,
    timeout_ms: 5_000,
    billing: 'prepaid',
  });
  t.match(endpoint.upstream, /^http:\/\/127\.0\.0\.1:\d+$/);

  const call = (path: string) => request(gateway, `/v1/sample${path}`, { method: 'GET' });
  const ok = await call('/ok');
  t.equal(ok.status, 200, 'the sample answers through the gateway at once');
  t.equal(ok.headers['x-svc-outcome'], 'ok');
  t.match(ok.body, { sample: true, ok: true });
  const fail = await call('/fail');
  t.equal(fail.status, 500);
  t.equal(fail.headers['x-svc-outcome'], 'server_error');
  const slow = await call('/slow?ms=700');
  t.equal(slow.status, 200);
  t.equal(slow.headers['x-svc-outcome'], 'latency_breach', 'past the 500 ms SLA');
  const reset = await call('/reset');
  t.equal(reset.headers['x-svc-outcome'], 'network_error');
  t.equal((await call('/slow?ms=nope')).status, 400, 'a bad ms is the sample’s 400');
  t.equal((await call('/elsewhere')).status, 404);

  // Prepaid: a key whose account holds nothing is refused; a deposit (with --wait's propagation) lets it in.
  // The pool must be funded first: while it is empty, keyed calls go uncovered and pay nothing.
  t.equal((await admin('POST', '/_admin/v1/pool/fund', { amount: 10_000_000 })).status, 201);
  const issued = (await admin('POST', '/_admin/v1/keys', { name: 'agent' })).body as { key: string; account_id: string; version: number };
  // The gateway must know the key before it is used (else the call is keyless, and forwarded).
  t.equal((await admin('POST', '/_admin/v1/sync/wait', { version: issued.version, timeout_ms: 10_000 })).status, 200);
  const keyed = () => request(gateway, '/v1/sample/ok', { method: 'GET', headers: { authorization: `Bearer ${issued.key}` } });
  const unpaid = await keyed();
  t.equal(unpaid.status, 402);
  t.match(unpaid.body, { code: 'svc_payment_required', required: 100, available: 0, account_id: issued.account_id });
  const deposit = await admin('POST', `/_admin/v1/accounts/${issued.account_id}/deposit`, { amount: 1_000, reference: 'first' });
  t.equal(deposit.status, 201, deposit.text);
  t.equal((await admin('POST', '/_admin/v1/sync/wait', { version: deposit.body.version, timeout_ms: 10_000 })).body.complete, true);
  t.equal((await keyed()).status, 200, 'the deposit reached the gateway: admitted');

  t.equal(await up.stop(), 0, 'up stops cleanly, the sample with it');

  // A second start: the sample moves to its new port.
  const again = sampleUp(t, dataDir);
  await waitFor(() => /Press Ctrl-C to stop\./.test(again.stdout()), 'the second `up`', WAIT_LIMIT_MS * 2);
  const admin2 = adminOf(line(again.stdout(), 'control admin \\+ sync')!);
  const moved = (await admin2('GET', '/_admin/v1/endpoints/sample')).body;
  t.not(moved.upstream, endpoint.upstream, 'registered again with the new port');
  t.equal((await request(line(again.stdout(), 'gateway \\(\\{market_url\\}\\)')!, '/v1/sample/ok', { method: 'GET' })).status, 200);

  // Someone's own endpoint named sample: left alone, and up --sample refuses to start.
  t.equal(
    (await admin2('PATCH', '/_admin/v1/endpoints/sample', { display_name: 'Our own sample API', upstream: 'http://10.0.0.7:8080' })).status,
    200,
  );
  t.equal(await again.stop(), 0);
  const refused = sampleUp(t, dataDir);
  t.equal((await refused.exited).code, 1, 'up --sample exits 1');
  t.match(refused.stderr(), /an endpoint named sample exists \(upstream http:\/\/10\.0\.0\.7:8080\) and is not svc's sample/);
});
