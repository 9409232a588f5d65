/**
 * The gateway's operator surface on its own port: `GET /health` and `GET /metrics`.
 *
 * Without credentials `/health` says only whether the gateway serves calls, and why not in one
 * word (for load balancers and probes). With `Authorization: Bearer <metrics token>` it answers
 * the detailed body (proxy engine, snapshot version and age, control connection, last nack,
 * journal backlog, the share of key limits it enforces).
 * `/metrics` always needs the metrics token. A wrong token is 401 `svc_unauthorized`; nothing
 * about the gateway, its endpoints or its control is published without the token.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BearerSecret } from '../protocol/bearer';
import type { GatewayHealthDetail, PublicHealth } from '../protocol/gateway';
import type { GatewayEngine } from '../protocol/snapshot';
import { sendJson, sendProblem } from '../runtime/http';
import { aggregateMetrics, type GatewayMetrics } from './metrics';
import { clusterHealth, clusterReadiness } from './workers/health';
import type { Gathered, GatherKind } from './workers/messages';
import type { ShareState } from './state/share';
import type { CoverageState } from './state/coverage';
import type { GatewayState } from './state/state';

export interface OperatorOptions {
  gatewayId: string;
  /** The proxy engine in use (`gateway.engine`). */
  engine: GatewayEngine;
  /** The control the gateway talks to now. */
  controlUrl: () => string;
  state: () => GatewayState | null;
  /** The last share of key limits control pushed; null before any (the whole limit applies). */
  limitShare: () => ShareState | null;
  /** Coverage as control last said it; null before any (every call is covered). */
  coverage: () => CoverageState | null;
  metrics: GatewayMetrics;
  sync: { readonly connected: boolean; readonly lastError: string | null; readonly lastNack: string | null };
  journalBacklog: () => number;
  /** The metrics token: configured (`metricsToken`), or read from this file when it appears. */
  metricsToken: string | undefined;
  metricsTokenFile: string;
  /**
   * A worker of a gateway run as several (`gateway.workers` > 1): `/health` and `/metrics` answer
   * for the whole gateway, from what the supervisor gathers from every worker.
   */
  cluster?: { gather(kind: GatherKind): Promise<Gathered> };
}

const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const REALM = { 'www-authenticate': 'Bearer realm="metrics"' };

function readToken(path: string): string | null {
  try {
    const token = readFileSync(path, 'utf8').trim();
    return token.length >= 32 ? token : null;
  } catch {
    return null;
  }
}

/** The one-word readiness of a gateway holding `state`. */
export function readiness(state: GatewayState | null): PublicHealth {
  if (state === null) return { status: 'not_ready', reason: 'no_snapshot' };
  if (state.flags.maintenance_mode) return { status: 'not_ready', reason: 'maintenance' };
  return { status: 'ok' };
}

/** The detailed `/health` of this process's gateway. */
export function healthDetail(opts: OperatorOptions): GatewayHealthDetail {
  const state = opts.state();
  const ready = readiness(state);
  return {
    status: ready.status,
    ready: ready.status === 'ok',
    reason: ready.status === 'ok' ? null : ready.reason,
    reason_detail:
      state === null
        ? (opts.sync.lastError ?? 'waiting for the first snapshot from control')
        : ready.status === 'ok'
          ? null
          : 'maintenance_mode is on',
    gateway_id: opts.gatewayId,
    engine: opts.engine,
    snapshot_version: state?.version ?? 0,
    snapshot_age_s: state ? Math.round((Date.now() - state.appliedAt) / 1000) : null,
    control_connected: opts.sync.connected,
    control_url: opts.controlUrl(),
    last_nack: opts.sync.lastNack,
    journal_backlog: opts.journalBacklog(),
    limit_share: opts.limitShare(),
    coverage: opts.coverage(),
  };
}

/**
 * `(req, res) => handled`: answers `/health` and `/metrics` (GET or HEAD) and returns true,
 * or returns false for every other request.
 */
export function operatorRoutes(opts: OperatorOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  let secret: BearerSecret | null = opts.metricsToken === undefined ? null : new BearerSecret(opts.metricsToken);
  // A gateway may start before control has written the token file; look again until it exists.
  const tokenSecret = (): BearerSecret | null => {
    if (secret === null) {
      const token = readToken(opts.metricsTokenFile);
      if (token !== null) secret = new BearerSecret(token);
    }
    return secret;
  };
  const authorized = (req: IncomingMessage): boolean => tokenSecret()?.matches(req.headers.authorization) === true;
  const refuse = (res: ServerResponse, req: IncomingMessage) => {
    opts.metrics.rejection('svc_unauthorized');
    sendProblem(
      res,
      'svc_unauthorized',
      req.headers.authorization === undefined ? 'missing bearer token: send the metrics token' : 'invalid bearer token for the metrics API',
      REALM,
    );
  };

  const health = (req: IncomingMessage, res: ServerResponse) => {
    if (opts.cluster !== undefined) return void clusterHealthAnswer(req, res, opts.cluster);
    const detail = healthDetail(opts);
    const status = detail.ready ? 200 : 503;
    if (req.headers.authorization === undefined) return sendJson(res, status, readiness(opts.state()));
    if (!authorized(req)) return refuse(res, req);
    sendJson(res, status, detail);
  };

  // Several workers: the gateway is ready when every worker is; the details list each worker.
  const clusterHealthAnswer = async (req: IncomingMessage, res: ServerResponse, cluster: NonNullable<OperatorOptions['cluster']>) => {
    if (req.headers.authorization !== undefined && !authorized(req)) return refuse(res, req);
    const detail = clusterHealth(await cluster.gather('health'), healthDetail(opts));
    const status = detail.ready ? 200 : 503;
    sendJson(res, status, req.headers.authorization === undefined ? clusterReadiness(detail) : detail);
  };

  const metrics = (req: IncomingMessage, res: ServerResponse) => {
    if (!authorized(req)) return refuse(res, req);
    const cluster = opts.cluster;
    const text =
      cluster === undefined
        ? opts.metrics.render()
        : cluster.gather('metrics').then(({ workers }) =>
            aggregateMetrics(
              workers.flatMap((w) => (w.report?.metrics ? [w.report.metrics] : [])),
              {
                configured: workers.length,
                answering: workers.filter((w) => w.report?.metrics).length,
                restarts: workers.reduce((sum, w) => sum + w.restarts, 0),
              },
            ),
          );
    text.then(
      (text) => {
        res.writeHead(200, {
          'content-type': METRICS_CONTENT_TYPE,
          'content-length': String(Buffer.byteLength(text)),
          'cache-control': 'no-store',
        });
        res.end(text);
      },
      () => sendProblem(res, 'svc_internal', 'the metrics could not be rendered'),
    );
  };

  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const url = req.url ?? '/';
    const path = url.indexOf('?') === -1 ? url : url.slice(0, url.indexOf('?'));
    if (path === '/health') health(req, res);
    else if (path === '/metrics') metrics(req, res);
    else return false;
    req.resume();
    return true;
  };
}
