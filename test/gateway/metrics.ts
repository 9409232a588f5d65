/**
 * The gateway's `/metrics` text: every series it exports, by name and type (a dropped or
 * retyped series fails), and the value of each after known updates: requests and rejections
 * by label, schema checks, the latency histogram's cumulative buckets with sum and count, the
 * gauges read at scrape time, the shipping counters, updates applied by kind and moves between controls. The snapshot age is absent before the
 * first snapshot.
 */
import t from 'tap';
import { GatewayMetrics, LATENCY_BUCKETS_S } from '../../gateway/metrics';
import { familyTypes, parseExposition, sampleValue } from '../fixtures/prometheus';

const FAMILIES = [
  'svc_gateway_control_connected gauge',
  'svc_gateway_control_moves_total counter',
  'svc_gateway_journal_backlog gauge',
  'svc_gateway_outcome_ship_failures_total counter',
  'svc_gateway_outcomes_rejected_total counter',
  'svc_gateway_outcomes_shipped_total counter',
  'svc_gateway_rejections_total counter',
  'svc_gateway_requests_total counter',
  'svc_gateway_schema_checks_total counter',
  'svc_gateway_snapshot_age_seconds gauge',
  'svc_gateway_snapshot_keys gauge',
  'svc_gateway_snapshot_version gauge',
  'svc_gateway_sync_updates_total counter',
  'svc_gateway_uncovered_calls_total counter',
  'svc_gateway_upstream_latency_seconds histogram',
];

t.test('every series, with its values', async (t) => {
  let age: number | null = null;
  let version = 0;
  const metrics = new GatewayMetrics({
    snapshotVersion: () => version,
    snapshotAgeSeconds: () => age,
    journalBacklog: () => 4,
    controlConnected: () => version > 0,
    keys: () => 3,
  });

  let families = parseExposition(await metrics.render());
  t.same(
    familyTypes(families),
    FAMILIES.filter((f) => !f.startsWith('svc_gateway_snapshot_age_seconds')),
    'before the first snapshot: no snapshot age',
  );
  t.equal(families.get('svc_gateway_requests_total')!.samples.length, 0, 'no call yet');
  t.equal(families.get('svc_gateway_upstream_latency_seconds')!.samples.length, 0);
  t.equal(sampleValue(families, 'svc_gateway_outcomes_shipped_total'), 0);
  t.equal(sampleValue(families, 'svc_gateway_control_connected'), 0);

  metrics.call('echo', 'ok', 200, 0.004);
  metrics.call('echo', 'ok', 200, 0.3);
  metrics.call('echo', 'latency_breach', 200, 31);
  metrics.call('odd "id"\\', 'network_error', 502, null);
  metrics.rejection('svc_rate_limited');
  metrics.rejection('svc_rate_limited');
  metrics.rejection('svc_unauthorized');
  metrics.uncovered('echo');
  metrics.uncovered('echo');
  metrics.schemaCheck('typed', 'invalid');
  metrics.schemaCheck('typed', 'valid');
  metrics.schemaCheck('typed', 'valid');
  metrics.outcomesShipped(5);
  metrics.outcomesShipped(2);
  metrics.shipFailure();
  metrics.outcomeRejected();
  metrics.syncUpdate('snapshot');
  metrics.syncUpdate('delta');
  metrics.syncUpdate('delta');
  metrics.controlMoved();
  version = 9;
  age = 2.5;

  families = parseExposition(await metrics.render());
  t.same(familyTypes(families), FAMILIES, 'the full set of series and types');
  t.equal(sampleValue(families, 'svc_gateway_requests_total', { endpoint: 'echo', outcome: 'ok', status: '200' }), 2);
  t.equal(sampleValue(families, 'svc_gateway_requests_total', { endpoint: 'echo', outcome: 'latency_breach', status: '200' }), 1);
  t.equal(
    sampleValue(families, 'svc_gateway_requests_total', { endpoint: 'odd "id"\\', outcome: 'network_error', status: '502' }),
    1,
    'label values escaped',
  );
  t.equal(sampleValue(families, 'svc_gateway_rejections_total', { code: 'svc_rate_limited' }), 2);
  t.equal(sampleValue(families, 'svc_gateway_rejections_total', { code: 'svc_unauthorized' }), 1);
  t.equal(sampleValue(families, 'svc_gateway_schema_checks_total', { endpoint: 'typed', result: 'valid' }), 2);
  t.equal(sampleValue(families, 'svc_gateway_schema_checks_total', { endpoint: 'typed', result: 'invalid' }), 1);
  t.equal(sampleValue(families, 'svc_gateway_uncovered_calls_total', { endpoint: 'echo' }), 2, 'calls admitted uncovered');

  const buckets = families.get('svc_gateway_upstream_latency_seconds')!.samples.filter((s) => s.name.endsWith('_bucket'));
  t.same(
    buckets.map((s) => [s.labels.endpoint, s.labels.le, s.value]),
    [...LATENCY_BUCKETS_S.map((le) => ['echo', String(le), le < 0.004 ? 0 : le < 0.3 ? 1 : 2]), ['echo', '+Inf', 3]],
    'cumulative buckets (le inclusive), +Inf counts all; a call without an upstream answer is not observed',
  );
  t.equal(sampleValue(families, 'svc_gateway_upstream_latency_seconds_sum', { endpoint: 'echo' }), 0.004 + 0.3 + 31);
  t.equal(sampleValue(families, 'svc_gateway_upstream_latency_seconds_count', { endpoint: 'echo' }), 3);

  t.equal(sampleValue(families, 'svc_gateway_snapshot_version'), 9);
  t.equal(sampleValue(families, 'svc_gateway_snapshot_age_seconds'), 2.5);
  t.equal(sampleValue(families, 'svc_gateway_snapshot_keys'), 3);
  t.equal(sampleValue(families, 'svc_gateway_journal_backlog'), 4);
  t.equal(sampleValue(families, 'svc_gateway_control_connected'), 1);
  t.equal(sampleValue(families, 'svc_gateway_outcomes_shipped_total'), 7);
  t.equal(sampleValue(families, 'svc_gateway_outcome_ship_failures_total'), 1);
  t.equal(sampleValue(families, 'svc_gateway_outcomes_rejected_total'), 1);
  t.equal(sampleValue(families, 'svc_gateway_sync_updates_total', { kind: 'snapshot' }), 1);
  t.equal(sampleValue(families, 'svc_gateway_sync_updates_total', { kind: 'delta' }), 2);
  t.equal(sampleValue(families, 'svc_gateway_control_moves_total'), 1);
  t.equal(families.get('svc_gateway_requests_total')!.help, 'Admitted calls by endpoint, outcome and status sent.');
});

t.test('a bucket bound is inclusive', async (t) => {
  const metrics = new GatewayMetrics({
    snapshotVersion: () => 1,
    snapshotAgeSeconds: () => 0,
    journalBacklog: () => 0,
    controlConnected: () => true,
    keys: () => 0,
  });
  metrics.call('e', 'ok', 200, 0.5);
  const families = parseExposition(await metrics.render());
  t.equal(sampleValue(families, 'svc_gateway_upstream_latency_seconds_bucket', { endpoint: 'e', le: '0.25' }), 0);
  t.equal(sampleValue(families, 'svc_gateway_upstream_latency_seconds_bucket', { endpoint: 'e', le: '0.5' }), 1);
});
