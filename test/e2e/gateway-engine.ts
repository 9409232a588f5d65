/**
 * `gateway.engine` through real processes (docs/design.md §2): gateways on the default engine, on
 * `SVC_GATEWAY_ENGINE=undici` and on `serve gateway --engine undici` each serve the operators'
 * walkthrough (docs/operators.md) (an endpoint, a key, the gate on); each names its engine in its start log line
 * and its authenticated `/health`, and control lists every gateway's engine in `svcctl status`.
 */
import t from 'tap';
import {
  GENEROUS_LIMITS,
  gatewayArgs,
  health,
  request,
  spawnService,
  startGatewayProcess,
  startStack,
  waitFor,
  type ServiceProcess,
} from '../fixtures/stack';
import { startUpstream } from '../fixtures/upstream';

/** The gateway's structured start line (`gateway listening`) from its stderr. */
function startLine(gw: ServiceProcess): Record<string, unknown> | undefined {
  for (const line of gw.stderr().split('\n')) {
    if (!line.startsWith('{')) continue;
    const record = JSON.parse(line) as Record<string, unknown>;
    if (record.msg === 'gateway listening') return record;
  }
  return undefined;
}

t.test('each gateway names its engine; both engines serve the walkthrough', async (t) => {
  const stack = await startStack(t, { controlEnv: GENEROUS_LIMITS });
  const byEnv = await startGatewayProcess(t, {
    dataDir: stack.dataDir,
    controlUrl: stack.control.url,
    id: 'gw-env',
    env: { SVC_GATEWAY_ENGINE: 'undici' },
  });
  const byFlag = await spawnService(t, 'gateway', [
    ...gatewayArgs({ dataDir: stack.dataDir, controlUrl: stack.control.url, id: 'gw-flag' }),
    '--engine',
    'undici',
  ]);
  const token = stack.metricsToken();
  await waitFor(async () => (await health(byFlag.url, token)).status === 200, 'the --engine gateway ready');
  const gateways: [ServiceProcess, string, string][] = [
    [stack.gateways[0]!, 'gw-1', 'http-proxy'],
    [byEnv, 'gw-env', 'undici'],
    [byFlag, 'gw-flag', 'undici'],
  ];

  const up = await startUpstream(t);
  await stack.addEndpoint({ id: 'weather', upstream: `${up.url}/v2`, headers: { 'X-Api-Key': 'upstream-secret' } });
  const key = await stack.issueKey({ name: 'agent' });
  const gate = await stack.setFlag('beta_gate_enabled', true);
  for (const [gw] of gateways)
    await waitFor(async () => (await health(gw.url, token)).body?.snapshot_version >= gate, `${gw.url} to apply the gate`);

  for (const [gw, id, engine] of gateways) {
    await t.test(`${id} on ${engine}`, async (t) => {
      const detail = await health(gw.url, token);
      t.equal(detail.status, 200);
      t.equal(detail.body.engine, engine, '/health with the metrics token names the engine');
      t.equal(detail.body.gateway_id, id);
      t.same((await health(gw.url, null)).body, { status: 'ok' }, 'without the token: one word, no engine');
      t.match(startLine(gw), { msg: 'gateway listening', engine, gateway_id: id }, 'the start log line names the engine');

      up.clear();
      const ok = await request(gw.url, '/v1/weather/forecast?city=Oslo', {
        body: '{"days":3}',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      });
      t.equal(ok.status, 200, 'a keyed call is forwarded');
      t.same(ok.body, { ok: true, method: 'POST', url: '/v2/forecast?city=Oslo' });
      t.equal(ok.headers['x-svc-outcome'], 'ok');
      t.equal(up.requests.length, 1);
      t.equal(up.requests[0]?.headers['x-api-key'], 'upstream-secret', 'the injected credential arrives');
      t.equal(up.requests[0]?.headers.authorization, undefined, 'the caller’s key does not');
      const refused = await request(gw.url, '/v1/weather/forecast', { body: '{}' });
      t.equal(refused.status, 403, 'a keyless call is refused with the gate on');
      t.equal(up.requests.length, 1, 'and never reaches the upstream');
    });
  }

  await t.test('svcctl status lists each gateway with its engine', async (t) => {
    const json = await stack.cli(['status', '--json']);
    t.equal(json.code, 0, json.stderr);
    const listed = Object.fromEntries(
      (json.json().gateways as { id: string; engine: string | null; connected: boolean }[]).map((g) => [g.id, [g.engine, g.connected]]),
    );
    t.same(listed, { 'gw-1': ['http-proxy', true], 'gw-env': ['undici', true], 'gw-flag': ['undici', true] });
    const human = await stack.cli(['status']);
    t.equal(human.code, 0, human.stderr);
    t.match(human.stdout, /^ID\s+CONNECTED\s+ENGINE\s+APPLIED/m, 'the table has an ENGINE column');
    for (const [, id, engine] of gateways) t.match(human.stdout, new RegExp(`^${id}\\s+yes\\s+${engine}\\s`, 'm'), `${id}: ${engine}`);
  });
});
