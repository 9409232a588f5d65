/**
 * Control's `/metrics`: every series it exports, by name and type (a dropped or retyped series
 * fails), the values read at scrape time, gateways that are gone dropped, label values escaped,
 * settler series only while a settler runs; served with the metrics token only.
 */
import t from 'tap';
import { ControlMetrics } from '../../control/metrics';
import type { ControlContext } from '../../control/context';
import type { GatewayStatus } from '../../protocol/gateways';
import type { PoolCoverage } from '../../protocol/lps';
import type { SettlerStatus } from '../../protocol/settlement';
import { startTestControl } from '../fixtures/control';
import { familyTypes, parseExposition, sampleValue } from '../fixtures/prometheus';

const CONTROL_FAMILIES = [
  'svc_control_gateway_applied_version gauge',
  'svc_control_gateway_connected gauge',
  'svc_control_gateway_lag_versions gauge',
  'svc_control_state_version gauge',
];
const SETTLER_FAMILIES = ['svc_control_settler_backlog gauge', 'svc_control_settler_lag_seconds gauge', 'svc_control_settler_state gauge'];
const COVERAGE_FAMILIES = ['svc_control_pool_coverage_paused gauge', 'svc_control_pool_free_micro gauge'];

const gateway = (id: string, connected: boolean, applied: number): GatewayStatus => ({
  id,
  connected,
  live: connected,
  weight: 1,
  share: null,
  applied_version: applied,
  last_seen: '2030-01-01T00:00:00.000Z',
  last_nack: null,
  engine: null,
  control_id: connected ? 'ctl_test' : null,
  gateway: null,
});

const settlerStatus = (state: SettlerStatus['state'], backlog: number, lagMs: number | null): SettlerStatus => ({
  state,
  cadence_ms: 1000,
  batch_cap: 10,
  backlog,
  lag_ms: lagMs,
  last_run_at: null,
  last_batch: null,
  last_error: null,
  halted: null,
  leader: null,
});

t.test('every series, with the values read when scraped', async (t) => {
  let version = 12;
  let gateways = [gateway('gw-1', true, 12), gateway('gw "2"\\\n', false, 9)];
  let settler: SettlerStatus | null = null;
  let coverage: PoolCoverage | null = null;
  const ctx = {
    store: { version: async () => version },
    gateways: async () => gateways,
    settler: async () => settler,
    coverage: () => coverage,
  } as unknown as ControlContext;
  const metrics = new ControlMetrics(ctx);
  t.equal(metrics.contentType, 'text/plain; version=0.0.4; charset=utf-8');

  let families = parseExposition(await metrics.render());
  t.same(familyTypes(families), CONTROL_FAMILIES, 'no settler: control series only');
  t.equal(sampleValue(families, 'svc_control_state_version'), 12);
  t.equal(sampleValue(families, 'svc_control_gateway_connected', { gateway: 'gw-1' }), 1);
  t.equal(sampleValue(families, 'svc_control_gateway_connected', { gateway: 'gw "2"\\\n' }), 0, 'label values escaped and read back');
  t.equal(sampleValue(families, 'svc_control_gateway_applied_version', { gateway: 'gw "2"\\\n' }), 9);
  t.equal(sampleValue(families, 'svc_control_gateway_lag_versions', { gateway: 'gw "2"\\\n' }), 3);
  t.equal(sampleValue(families, 'svc_control_gateway_lag_versions', { gateway: 'gw-1' }), 0);
  t.equal(families.get('svc_control_state_version')!.help, 'The state version control holds.');

  version = 14;
  gateways = [gateway('gw-3', true, 15)];
  settler = settlerStatus('paused', 7, 2500);
  families = parseExposition(await metrics.render());
  t.same(familyTypes(families), [...CONTROL_FAMILIES, ...SETTLER_FAMILIES].sort(), 'with a settler: its series too');
  t.equal(sampleValue(families, 'svc_control_state_version'), 14);
  t.same(
    families.get('svc_control_gateway_connected')!.samples.map((s) => s.labels.gateway),
    ['gw-3'],
    'a gateway no longer listed is no longer exported',
  );
  t.equal(sampleValue(families, 'svc_control_gateway_lag_versions', { gateway: 'gw-3' }), 0, 'never negative');
  t.same(
    families.get('svc_control_settler_state')!.samples.map((s) => [s.labels.state, s.value]),
    [
      ['running', 0],
      ['idle', 0],
      ['paused', 1],
      ['halted', 0],
    ],
  );
  t.equal(sampleValue(families, 'svc_control_settler_backlog'), 7);
  t.equal(sampleValue(families, 'svc_control_settler_lag_seconds'), 2.5);

  settler = settlerStatus('idle', 0, null);
  families = parseExposition(await metrics.render());
  t.equal(sampleValue(families, 'svc_control_settler_lag_seconds'), 0, 'no backlog: lag 0');
  t.equal(sampleValue(families, 'svc_control_settler_state', { state: 'idle' }), 1);

  coverage = { paused: true, manual: false, automatic: true, free: 900, min_free: 1_100, largest_call: 1_100 };
  families = parseExposition(await metrics.render());
  t.same(
    familyTypes(families),
    [...CONTROL_FAMILIES, ...SETTLER_FAMILIES, ...COVERAGE_FAMILIES].sort(),
    'coverage evaluated: its series too',
  );
  t.equal(sampleValue(families, 'svc_control_pool_coverage_paused', { reason: 'automatic' }), 1);
  t.equal(sampleValue(families, 'svc_control_pool_coverage_paused', { reason: 'manual' }), 0);
  t.equal(sampleValue(families, 'svc_control_pool_free_micro'), 900);
  coverage = { paused: true, manual: true, automatic: false, free: 5_000, min_free: 1_100, largest_call: 1_100 };
  families = parseExposition(await metrics.render());
  t.equal(sampleValue(families, 'svc_control_pool_coverage_paused', { reason: 'manual' }), 1);
  t.equal(sampleValue(families, 'svc_control_pool_coverage_paused', { reason: 'automatic' }), 0);
});

t.test('GET /metrics of a running control: every series, behind the metrics token', async (t) => {
  const control = await startTestControl(t);
  await control.handle.coverage.runOnce(); // its series appear once coverage was evaluated
  const token = control.handle.bootstrap.metricsToken.token;
  const res = await control.request(`${control.urls.control}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  t.equal(res.headers.get('cache-control'), 'no-store');
  const families = parseExposition(res.text);
  t.same(familyTypes(families), [...CONTROL_FAMILIES, ...SETTLER_FAMILIES, ...COVERAGE_FAMILIES].sort());
  t.equal(sampleValue(families, 'svc_control_state_version'), await control.handle.ctx.store.version());
  t.equal(families.get('svc_control_gateway_connected')!.samples.length, 0, 'no gateway yet');
  const refused = await control.request(`${control.urls.control}/metrics`, { headers: { authorization: `Bearer ${control.adminToken}` } });
  t.equal(refused.status, 401, 'the admin token is not the metrics token');
});
