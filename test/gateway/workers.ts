/**
 * A gateway of several workers seen as one (gateway/workers/health.ts, `aggregateMetrics` in
 * gateway/metrics.ts): the detailed `/health` from the workers' reports (ready while every
 * worker that answered is, the lowest version, backlogs and shares added up, each worker
 * listed) and `/metrics` added up over the workers, gauges by their own rule.
 */
import t from 'tap';
import { GatewayMetrics, aggregateMetrics } from '../../gateway/metrics';
import { clusterHealth, clusterReadiness } from '../../gateway/workers/health';
import type { GatheredWorker, WorkerReport } from '../../gateway/workers/messages';
import { GatewayHealthDetail } from '../../protocol/gateway';
import { familyTypes, parseExposition, sampleValue } from '../fixtures/prometheus';

function detail(id: string, over: Partial<GatewayHealthDetail> = {}): GatewayHealthDetail {
  return {
    status: 'ok',
    ready: true,
    reason: null,
    reason_detail: null,
    gateway_id: id,
    engine: 'undici',
    snapshot_version: 7,
    snapshot_age_s: 3,
    control_connected: true,
    control_url: 'http://ctl:7073',
    last_nack: null,
    journal_backlog: 2,
    limit_share: { share: 0.25, gateways: 4, mode: 'split', received_at: '2026-01-01T00:00:01.000Z' },
    coverage: { covered: true, allowance: 1000, held: 10, received_at: '2026-01-01T00:00:02.000Z' },
    ...over,
  };
}

function worker(index: number, health: GatewayHealthDetail | null, state: GatheredWorker['state'] = 'running'): GatheredWorker {
  const report: WorkerReport | null = health === null ? null : { health, pid: 100 + index, connections: 5, answered: 40, metrics: null };
  return { index, id: `gw.${index}`, pid: state === 'restarting' ? null : 100 + index, state, restarts: index - 1, report };
}

t.test('the whole gateway from its workers', async (t) => {
  const self = detail('gw.1');
  const both = clusterHealth(
    {
      id: 'gw',
      workers: [
        worker(1, self),
        worker(
          2,
          detail('gw.2', {
            snapshot_version: 6,
            snapshot_age_s: 9,
            journal_backlog: 5,
            last_nack: 'v8 at …: bad',
            limit_share: { share: 0.25, gateways: 4, mode: 'split', received_at: '2026-01-01T00:00:05.000Z' },
            coverage: { covered: false, allowance: 500, held: 0, received_at: '2026-01-01T00:00:00.000Z' },
          }),
        ),
      ],
    },
    self,
  );
  t.ok(GatewayHealthDetail.safeParse(both).success, 'the documented shape');
  t.match(both, {
    status: 'ok',
    gateway_id: 'gw',
    engine: 'undici',
    snapshot_version: 6,
    snapshot_age_s: 9,
    journal_backlog: 7,
    last_nack: 'v8 at …: bad',
    limit_share: { share: 0.5, gateways: 4, received_at: '2026-01-01T00:00:05.000Z' },
    coverage: { covered: false, allowance: 1500, held: 10, received_at: '2026-01-01T00:00:02.000Z' },
  });
  t.same(both.workers![1], {
    index: 2,
    id: 'gw.2',
    pid: 102,
    state: 'running',
    restarts: 1,
    answered: true,
    ready: true,
    snapshot_version: 6,
    control_connected: true,
    journal_backlog: 5,
    limit_share: 0.25,
    connections: 5,
    answered_calls: 40,
  });
  t.same(clusterReadiness(both), { status: 'ok' });

  const restarting = clusterHealth({ id: 'gw', workers: [worker(1, self), worker(2, null, 'restarting')] }, self);
  t.match(restarting, { ready: true, journal_backlog: 2 }, 'a worker being started again takes no calls: the others decide');
  t.match(restarting.workers![1], { answered: false, pid: null, state: 'restarting', ready: null, journal_backlog: null });

  const waiting = detail('gw.2', { status: 'not_ready', ready: false, reason: 'no_snapshot', reason_detail: 'control unreachable' });
  const notReady = clusterHealth({ id: 'gw', workers: [worker(1, self), worker(2, waiting)] }, self);
  t.match(notReady, { status: 'not_ready', ready: false, reason: 'no_snapshot', reason_detail: 'worker gw.2: control unreachable' });
  t.same(clusterReadiness(notReady), { status: 'not_ready', reason: 'no_snapshot' });

  const none = clusterHealth({ id: 'gw', workers: [worker(1, null, 'starting')] }, self);
  t.match(none, {
    ready: false,
    reason: 'no_snapshot',
    reason_detail: 'no worker answered',
    snapshot_version: 0,
    snapshot_age_s: null,
    control_connected: false,
    control_url: 'http://ctl:7073',
    limit_share: null,
    coverage: null,
  });
});

t.test('/metrics added up over the workers', async (t) => {
  const make = (version: number, age: number | null, backlog: number, connected: boolean) =>
    new GatewayMetrics({
      snapshotVersion: () => version,
      snapshotAgeSeconds: () => age,
      journalBacklog: () => backlog,
      controlConnected: () => connected,
      keys: () => version * 10,
    });
  const a = make(9, 2, 3, true);
  const b = make(8, null, 4, false);
  a.call('echo', 'ok', 200, 0.004);
  b.call('echo', 'ok', 200, 0.3);
  b.call('echo', 'server_error', 502, 0.3);
  a.rejection('svc_rate_limited');
  t.equal(await b.answered(), 2);
  t.equal(await a.answered(), 2, 'calls and refusals');
  t.notOk(
    (await b.json()).some((m) => m.name === 'svc_gateway_snapshot_age_seconds'),
    'no age before a snapshot, as in the text',
  );
  const text = await aggregateMetrics([await a.json(), await b.json()], { configured: 3, answering: 2, restarts: 4 });
  const families = parseExposition(text);
  t.ok(familyTypes(families).includes('svc_gateway_upstream_latency_seconds histogram'));
  t.equal(sampleValue(families, 'svc_gateway_requests_total', { endpoint: 'echo', outcome: 'ok', status: '200' }), 2);
  t.equal(sampleValue(families, 'svc_gateway_requests_total', { endpoint: 'echo', outcome: 'server_error', status: '502' }), 1);
  t.equal(sampleValue(families, 'svc_gateway_upstream_latency_seconds_count', { endpoint: 'echo' }), 3);
  t.equal(sampleValue(families, 'svc_gateway_snapshot_version'), 8, 'the lowest version a worker enforces');
  t.equal(sampleValue(families, 'svc_gateway_snapshot_age_seconds'), 2, 'the oldest state');
  t.equal(sampleValue(families, 'svc_gateway_snapshot_keys'), 90);
  t.equal(sampleValue(families, 'svc_gateway_journal_backlog'), 7, 'backlogs add up');
  t.equal(sampleValue(families, 'svc_gateway_control_connected'), 0, 'connected only while every worker is');
  t.equal(sampleValue(families, 'svc_gateway_workers'), 3);
  t.equal(sampleValue(families, 'svc_gateway_workers_answering'), 2);
  t.equal(sampleValue(families, 'svc_gateway_worker_restarts_total'), 4);
});
