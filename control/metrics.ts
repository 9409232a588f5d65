/**
 * Control's `GET /metrics` on the admin + sync listener, in the Prometheus text format
 * (version 0.0.4), through prom-client. It needs `Authorization: Bearer <metrics token>` like
 * the gateways' own (`data/metrics.token` or `SVC_METRICS_TOKEN`); the mount in `server.ts`
 * checks it.
 *
 * Every series is a gauge read when scraped: a scrape reads the store's version, the gateways
 * and the settler once, and each gauge's `collect` sets its samples from that reading, so
 * nothing is updated on any other path. Each control has registries of its own (never
 * prom-client's global one); the settler's gauges are a second registry, exposed only while a
 * settler runs, so a control without one shows no settler series at all; the pool's coverage
 * (coverage.ts: its last evaluation, no query of its own) a third, exposed once evaluated.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 */
import { Gauge, Registry } from 'prom-client';
import type { GatewayStatus } from '../protocol/gateways';
import { SETTLER_STATES, type SettlerStatus } from '../protocol/settlement';
import type { ControlContext } from './context';
import type { Router } from './http/router';
import type { Coverage } from './pool';

/** What one scrape reads. */
interface Reading {
  version: number;
  gateways: GatewayStatus[];
  settler: SettlerStatus | null;
  coverage: Coverage | null;
}

/** Control's gauges: state version, each gateway's applied version and connection, the settler. */
export class ControlMetrics {
  private readonly control = new Registry();
  private readonly settler = new Registry();
  private readonly coverage = new Registry();
  private reading: Reading = { version: 0, gateways: [], settler: null, coverage: null };
  readonly contentType = this.control.contentType;

  constructor(private readonly ctx: ControlContext) {
    this.gauge(this.control, 'svc_control_state_version', 'The state version control holds.', [], (g, r) => g.set(r.version));
    this.perGateway('svc_control_gateway_connected', 'Whether the gateway holds a sync stream now (1) or not (0).', (g) =>
      g.connected ? 1 : 0,
    );
    this.perGateway('svc_control_gateway_applied_version', 'The state version the gateway acked last.', (g) => g.applied_version);
    this.perGateway('svc_control_gateway_lag_versions', 'State versions the gateway is behind control.', (g, version) =>
      Math.max(0, version - g.applied_version),
    );
    this.gauge(this.settler, 'svc_control_settler_state', 'The settler state (1 for the current one).', ['state'], (g, r) => {
      for (const s of SETTLER_STATES) g.set({ state: s }, r.settler?.state === s ? 1 : 0);
    });
    this.gauge(this.settler, 'svc_control_settler_backlog', 'Outcomes received and not yet settled.', [], (g, r) =>
      g.set(r.settler?.backlog ?? 0),
    );
    this.gauge(this.settler, 'svc_control_settler_lag_seconds', 'Age of the oldest unsettled outcome (0 when none).', [], (g, r) =>
      g.set((r.settler?.lag_ms ?? 0) / 1000),
    );
    this.gauge(
      this.coverage,
      'svc_control_pool_coverage_paused',
      'Whether the pool covers no new calls (1), by reason: an operator (manual) or free capital below pool.minFree (automatic).',
      ['reason'],
      (g, r) => {
        g.set({ reason: 'manual' }, r.coverage?.manual ? 1 : 0);
        g.set({ reason: 'automatic' }, r.coverage?.automatic ? 1 : 0);
      },
    );
    this.gauge(this.coverage, 'svc_control_pool_free_micro', "The pool's free capital (capital less locked), micro-units.", [], (g, r) =>
      g.set(r.coverage?.free ?? 0),
    );
  }

  /** The exposition text now. */
  async render(): Promise<string> {
    const reading: Reading = {
      version: await this.ctx.store.version(),
      gateways: await this.ctx.gateways(),
      settler: await this.ctx.settler(),
      coverage: this.ctx.coverage?.() ?? null,
    };
    this.reading = reading;
    const parts = [await this.control.metrics()];
    if (reading.settler !== null) parts.push(await this.settler.metrics());
    if (reading.coverage !== null) parts.push(await this.coverage.metrics());
    return parts.join('\n');
  }

  /** A gauge whose samples `collect` sets from the scrape's reading; one with labels drops stale samples first. */
  private gauge(
    registry: Registry,
    name: string,
    help: string,
    labelNames: readonly string[],
    collect: (g: Gauge, r: Reading) => void,
  ): void {
    const reading = () => this.reading;
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        if (labelNames.length > 0) this.reset();
        collect(this, reading());
      },
    });
  }

  private perGateway(name: string, help: string, value: (g: GatewayStatus, version: number) => number): void {
    this.gauge(this.control, name, help, ['gateway'], (metric, r) => {
      for (const g of r.gateways) metric.set({ gateway: g.id }, value(g, r.version));
    });
  }
}

export function registerMetricsRoutes(router: Router, ctx: ControlContext): void {
  const metrics = new ControlMetrics(ctx);
  router.get('/metrics', { otherQuery: 'ignore' }, async ({ res }) => {
    const text = await metrics.render();
    res.writeHead(200, {
      'content-type': metrics.contentType,
      'content-length': String(Buffer.byteLength(text)),
      'cache-control': 'no-store',
    });
    res.end(text);
  });
}
