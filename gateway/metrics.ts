/**
 * Gateway metrics in the Prometheus text exposition format (version 0.0.4). Counters are
 * plain numbers in maps keyed by their label values, so the hot path is one Map lookup and
 * an increment; rendering happens only when `/metrics` is scraped.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 */

/** Upstream latency histogram bucket bounds, in seconds. */
export const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

class Histogram {
  readonly counts = new Array<number>(LATENCY_BUCKETS_S.length + 1).fill(0);
  sum = 0;
  count = 0;

  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS_S.length && seconds > LATENCY_BUCKETS_S[i]!) i++;
    this.counts[i]!++;
    this.sum += seconds;
    this.count++;
  }
}

export interface GaugeSource {
  snapshotVersion(): number;
  snapshotAgeSeconds(): number | null;
  journalBacklog(): number;
  controlConnected(): boolean;
  keys(): number;
}

export class GatewayMetrics {
  private readonly requests = new Map<string, number>();
  private readonly rejections = new Map<string, number>();
  private readonly latency = new Map<string, Histogram>();
  private readonly schemaChecks = new Map<string, number>();
  private readonly gauges: GaugeSource;
  shippedOutcomes = 0;
  shipFailures = 0;
  rejectedOutcomes = 0;

  constructor(gauges: GaugeSource) {
    this.gauges = gauges;
  }

  /** An admitted call finished with `outcome` and `status` sent to the caller. */
  call(endpoint: string, outcome: string, status: number, upstreamSeconds: number | null): void {
    const key = `${endpoint}\u0000${outcome}\u0000${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    if (upstreamSeconds !== null) {
      let h = this.latency.get(endpoint);
      if (!h) this.latency.set(endpoint, (h = new Histogram()));
      h.observe(upstreamSeconds);
    }
  }

  /** The gateway refused a call itself (403, 404, 405, 413, 429, 400, 503). */
  rejection(code: string): void {
    this.rejections.set(code, (this.rejections.get(code) ?? 0) + 1);
  }

  /** A response-schema check ended: `valid`, `invalid`, or not checked (`too_large`, `encoding`). */
  schemaCheck(endpoint: string, result: string): void {
    const key = `${endpoint}\u0000${result}`;
    this.schemaChecks.set(key, (this.schemaChecks.get(key) ?? 0) + 1);
  }

  render(): string {
    const out: string[] = [];
    out.push('# HELP svc_gateway_requests_total Admitted calls by endpoint, outcome and status sent.');
    out.push('# TYPE svc_gateway_requests_total counter');
    for (const [key, n] of this.requests) {
      const [endpoint, outcome, status] = key.split('\u0000') as [string, string, string];
      out.push(`svc_gateway_requests_total{endpoint="${escapeLabel(endpoint)}",outcome="${outcome}",status="${status}"} ${n}`);
    }
    out.push('# HELP svc_gateway_rejections_total Calls the gateway refused, by error code.');
    out.push('# TYPE svc_gateway_rejections_total counter');
    for (const [code, n] of this.rejections) out.push(`svc_gateway_rejections_total{code="${code}"} ${n}`);
    out.push('# HELP svc_gateway_schema_checks_total Response-schema checks by endpoint and result (too_large and encoding: not checked).');
    out.push('# TYPE svc_gateway_schema_checks_total counter');
    for (const [key, n] of this.schemaChecks) {
      const [endpoint, result] = key.split('\u0000') as [string, string];
      out.push(`svc_gateway_schema_checks_total{endpoint="${escapeLabel(endpoint)}",result="${result}"} ${n}`);
    }
    out.push('# HELP svc_gateway_upstream_latency_seconds Time to the upstream response head.');
    out.push('# TYPE svc_gateway_upstream_latency_seconds histogram');
    for (const [endpoint, h] of this.latency) {
      const label = `endpoint="${escapeLabel(endpoint)}"`;
      let cumulative = 0;
      for (let i = 0; i < LATENCY_BUCKETS_S.length; i++) {
        cumulative += h.counts[i]!;
        out.push(`svc_gateway_upstream_latency_seconds_bucket{${label},le="${LATENCY_BUCKETS_S[i]}"} ${cumulative}`);
      }
      out.push(`svc_gateway_upstream_latency_seconds_bucket{${label},le="+Inf"} ${h.count}`);
      out.push(`svc_gateway_upstream_latency_seconds_sum{${label}} ${h.sum}`);
      out.push(`svc_gateway_upstream_latency_seconds_count{${label}} ${h.count}`);
    }
    const gauge = (name: string, help: string, value: number | null) => {
      if (value === null) return;
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${value}`);
    };
    gauge('svc_gateway_snapshot_version', 'State version in force (0 before the first snapshot).', this.gauges.snapshotVersion());
    gauge('svc_gateway_snapshot_age_seconds', 'Seconds since the state in force was applied.', this.gauges.snapshotAgeSeconds());
    gauge('svc_gateway_snapshot_keys', 'Keys in the state in force.', this.gauges.keys());
    gauge('svc_gateway_journal_backlog', 'Outcome records not yet acked by control.', this.gauges.journalBacklog());
    gauge('svc_gateway_control_connected', '1 when the sync stream to control is open.', this.gauges.controlConnected() ? 1 : 0);
    out.push('# HELP svc_gateway_outcomes_shipped_total Outcome records acked by control.');
    out.push('# TYPE svc_gateway_outcomes_shipped_total counter');
    out.push(`svc_gateway_outcomes_shipped_total ${this.shippedOutcomes}`);
    out.push('# HELP svc_gateway_outcome_ship_failures_total Failed attempts to ship an outcome batch.');
    out.push('# TYPE svc_gateway_outcome_ship_failures_total counter');
    out.push(`svc_gateway_outcome_ship_failures_total ${this.shipFailures}`);
    out.push("# HELP svc_gateway_outcomes_rejected_total Outcome records control refused as invalid, set aside in the journal's rejected.jsonl.");
    out.push('# TYPE svc_gateway_outcomes_rejected_total counter');
    out.push(`svc_gateway_outcomes_rejected_total ${this.rejectedOutcomes}`);
    return out.join('\n') + '\n';
  }
}
