/**
 * Gateway metrics in the Prometheus text exposition format (version 0.0.4), through
 * prom-client, in a registry of this gateway's own (never prom-client's global one).
 *
 * Why prom-client on the hot path: `npm run bench:metrics` times the per-call update (count
 * `svc_gateway_requests_total` and observe the latency histogram) both ways, 1,000,000 calls,
 * medians of 5 runs, in CPU time: 592 ns per call with prom-client against 247 ns for the
 * hand-rolled Map counters it replaced (Node 20, this project's 2-CPU machine), so about
 * 0.35 µs more per call. That is under the 1 µs per call above which the gateway would have
 * kept its own counters (issue #16); the figures are in bench/README.md.
 *
 * Counters and the histogram are updated per call; the gauges are read from `GaugeSource`
 * when `/metrics` is scraped. `svc_gateway_snapshot_age_seconds` is left out until the first
 * snapshot is applied.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 */
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';

/** Upstream latency histogram bucket bounds, in seconds. */
export const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface GaugeSource {
  snapshotVersion(): number;
  snapshotAgeSeconds(): number | null;
  journalBacklog(): number;
  controlConnected(): boolean;
  keys(): number;
}

const AGE = 'svc_gateway_snapshot_age_seconds';

/** One worker's metrics as it sends them to the gateway's supervisor (prom-client's JSON). */
export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** What the supervisor knows of a gateway's workers, exposed beside their aggregated metrics. */
export interface WorkerCounts {
  /** Workers configured (`gateway.workers`). */
  configured: number;
  /** Workers whose metrics are in the aggregate (listening and answering). */
  answering: number;
  /** Workers restarted since the gateway started. */
  restarts: number;
}

export class GatewayMetrics {
  private readonly registry = new Registry();
  /** The series in the order `/metrics` lists them. */
  private readonly names: string[] = [];
  private readonly requests: Counter;
  private readonly rejections: Counter;
  private readonly schemaChecks: Counter;
  private readonly latency: Histogram;
  private readonly shipped: Counter;
  private readonly shipFailures: Counter;
  private readonly rejectedOutcomes: Counter;
  private readonly syncUpdates: Counter;
  private readonly controlMoves: Counter;
  private readonly uncoveredCalls: Counter;
  private readonly snapshotAge: () => number | null;

  constructor(gauges: GaugeSource) {
    const registers = [this.registry];
    const counter = (name: string, help: string, labelNames: string[] = []) => {
      this.names.push(name);
      return new Counter({ name, help, labelNames, registers });
    };
    // `aggregator`: how a gateway of several workers shows the gauge (counters and the histogram add up).
    const gauge = (name: string, help: string, read: () => number | null, aggregator: 'sum' | 'min' | 'max' = 'sum') => {
      this.names.push(name);
      new Gauge({
        name,
        help,
        registers,
        aggregator,
        collect() {
          this.set(read() ?? 0);
        },
      });
    };
    this.requests = counter('svc_gateway_requests_total', 'Admitted calls by endpoint, outcome and status sent.', [
      'endpoint',
      'outcome',
      'status',
    ]);
    this.rejections = counter('svc_gateway_rejections_total', 'Calls the gateway refused, by error code.', ['code']);
    this.schemaChecks = counter(
      'svc_gateway_schema_checks_total',
      'Response-schema checks by endpoint and result (too_large and encoding: not checked).',
      ['endpoint', 'result'],
    );
    this.names.push('svc_gateway_upstream_latency_seconds');
    this.latency = new Histogram({
      name: 'svc_gateway_upstream_latency_seconds',
      help: 'Time to the upstream response head.',
      labelNames: ['endpoint'],
      buckets: LATENCY_BUCKETS_S,
      registers,
    });
    gauge('svc_gateway_snapshot_version', 'State version in force (0 before the first snapshot).', () => gauges.snapshotVersion(), 'min');
    gauge(AGE, 'Seconds since the state in force was applied.', () => gauges.snapshotAgeSeconds(), 'max');
    gauge('svc_gateway_snapshot_keys', 'Keys in the state in force.', () => gauges.keys(), 'max');
    gauge('svc_gateway_journal_backlog', 'Outcome records not yet acked by control.', () => gauges.journalBacklog());
    gauge('svc_gateway_control_connected', '1 when the sync stream to control is open.', () => (gauges.controlConnected() ? 1 : 0), 'min');
    this.shipped = counter('svc_gateway_outcomes_shipped_total', 'Outcome records acked by control.');
    this.shipFailures = counter('svc_gateway_outcome_ship_failures_total', 'Failed attempts to ship an outcome batch.');
    this.rejectedOutcomes = counter(
      'svc_gateway_outcomes_rejected_total',
      "Outcome records control refused as invalid, set aside in the journal's rejected.jsonl.",
    );
    this.syncUpdates = counter('svc_gateway_sync_updates_total', 'State updates applied from control, by kind: snapshot (full) or delta.', [
      'kind',
    ]);
    this.controlMoves = counter(
      'svc_gateway_control_moves_total',
      'Moves to the next control of controlUrls after the current one went away.',
    );
    this.uncoveredCalls = counter(
      'svc_gateway_uncovered_calls_total',
      "Keyed calls admitted uncovered (the pool paused, or this gateway's part of its free capital spent), by endpoint.",
      ['endpoint'],
    );
    this.snapshotAge = () => gauges.snapshotAgeSeconds();
  }

  /** A keyed call was admitted uncovered. */
  uncovered(endpoint: string): void {
    this.uncoveredCalls.inc({ endpoint });
  }

  /** An admitted call finished with `outcome` and `status` sent to the caller. */
  call(endpoint: string, outcome: string, status: number, upstreamSeconds: number | null): void {
    this.requests.inc({ endpoint, outcome, status });
    if (upstreamSeconds !== null) this.latency.observe({ endpoint }, upstreamSeconds);
  }

  /** The gateway refused a call itself (403, 404, 405, 413, 429, 400, 503). */
  rejection(code: string): void {
    this.rejections.inc({ code });
  }

  /** A response-schema check ended: `valid`, `invalid`, or not checked (`too_large`, `encoding`). */
  schemaCheck(endpoint: string, result: string): void {
    this.schemaChecks.inc({ endpoint, result });
  }

  /** Control acked `n` outcome records. */
  outcomesShipped(n: number): void {
    this.shipped.inc(n);
  }

  /** An attempt to ship an outcome batch failed. */
  shipFailure(): void {
    this.shipFailures.inc();
  }

  /** Control refused an outcome record as invalid. */
  outcomeRejected(): void {
    this.rejectedOutcomes.inc();
  }

  /** An update from control was applied: a full snapshot or a delta. */
  syncUpdate(kind: 'snapshot' | 'delta'): void {
    this.syncUpdates.inc({ kind });
  }

  /** The gateway moved to the next control of its list. */
  controlMoved(): void {
    this.controlMoves.inc();
  }

  /** The exposition text now. */
  async render(): Promise<string> {
    const names = this.snapshotAge() === null ? this.names.filter((n) => n !== AGE) : this.names;
    const families = await Promise.all(names.map((name) => this.registry.getSingleMetricAsString(name)));
    return `${families.join('\n')}\n`;
  }

  /** The series now as prom-client's JSON, in `render`'s order: what a worker sends for the gateway's aggregate. */
  async json(): Promise<MetricsJson> {
    const all = await this.registry.getMetricsAsJSON();
    const byName = new Map(all.map((m) => [m.name, m]));
    const names = this.snapshotAge() === null ? this.names.filter((n) => n !== AGE) : this.names;
    return names.map((n) => byName.get(n)!);
  }

  /** Admitted calls and refusals this process answered (`svc_gateway_requests_total` + `svc_gateway_rejections_total`). */
  async answered(): Promise<number> {
    let total = 0;
    for (const counter of [this.requests, this.rejections]) for (const v of (await counter.get()).values) total += v.value;
    return total;
  }
}

/**
 * The metrics of a gateway of several workers, as one gateway: each series added up over the
 * workers (counters, the histogram, `svc_gateway_journal_backlog`), or their lowest
 * (`svc_gateway_snapshot_version`, `svc_gateway_control_connected`) or highest
 * (`svc_gateway_snapshot_age_seconds`, `svc_gateway_snapshot_keys`), by prom-client's
 * `AggregatorRegistry`; then `svc_gateway_workers`, `svc_gateway_workers_answering` and
 * `svc_gateway_worker_restarts_total`.
 */
export async function aggregateMetrics(workers: readonly MetricsJson[], counts: WorkerCounts): Promise<string> {
  const aggregated = AggregatorRegistry.aggregate([...workers]);
  const own = new Registry();
  const registers = [own];
  new Gauge({ name: 'svc_gateway_workers', help: 'Worker processes configured (gateway.workers).', registers }).set(counts.configured);
  new Gauge({
    name: 'svc_gateway_workers_answering',
    help: 'Workers listening whose series are in this aggregate.',
    registers,
  }).set(counts.answering);
  new Counter({
    name: 'svc_gateway_worker_restarts_total',
    help: 'Workers the supervisor started again after they exited.',
    registers,
  }).inc(counts.restarts);
  return (await aggregated.metrics()) + '\n' + (await own.metrics());
}
