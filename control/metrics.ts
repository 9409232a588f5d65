/**
 * Control's `GET /metrics` on the admin + sync listener, in the Prometheus text format
 * (version 0.0.4). It needs `Authorization: Bearer <metrics token>` like the gateways' own
 * (`data/metrics.token` or `SVC_METRICS_TOKEN`); the mount in `server.ts` checks it.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 */
import type { ControlContext } from './context';
import type { Router } from './http/router';

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const SETTLER_STATES = ['running', 'idle', 'paused'] as const;

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** Control's gauges: state version, each gateway's applied version and connection, the settler. */
export function renderControlMetrics(ctx: ControlContext): string {
  const out: string[] = [];
  const gauge = (name: string, help: string, samples: [string, number][]) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [labels, value] of samples) out.push(`${name}${labels} ${value}`);
  };
  const version = ctx.store.version();
  gauge('svc_control_state_version', 'The state version control holds.', [['', version]]);
  const gateways = ctx.gateways();
  const label = (id: string) => `{gateway="${escapeLabel(id)}"}`;
  gauge('svc_control_gateway_connected', 'Whether the gateway holds a sync stream now (1) or not (0).', gateways.map((g) => [label(g.id), g.connected ? 1 : 0]));
  gauge('svc_control_gateway_applied_version', 'The state version the gateway acked last.', gateways.map((g) => [label(g.id), g.applied_version]));
  gauge('svc_control_gateway_lag_versions', 'State versions the gateway is behind control.', gateways.map((g) => [label(g.id), Math.max(0, version - g.applied_version)]));
  const settler = ctx.settler();
  if (settler !== null) {
    gauge('svc_control_settler_state', 'The settler state (1 for the current one).', SETTLER_STATES.map((s) => [`{state="${s}"}`, settler.state === s ? 1 : 0]));
    gauge('svc_control_settler_backlog', 'Outcomes received and not yet settled.', [['', settler.backlog]]);
    gauge('svc_control_settler_lag_seconds', 'Age of the oldest unsettled outcome (0 when none).', [['', (settler.lag_ms ?? 0) / 1000]]);
  }
  return out.join('\n') + '\n';
}

export function registerMetricsRoutes(router: Router, ctx: ControlContext): void {
  router.get('/metrics', ({ res }) => {
    const text = renderControlMetrics(ctx);
    res.writeHead(200, { 'content-type': CONTENT_TYPE, 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store' });
    res.end(text);
  });
}
