/**
 * The detailed `/health` of a gateway run as several workers, from what each worker reported:
 * the fields of a single gateway, for the whole gateway, and a `workers` list.
 */
import type { GatewayHealthDetail, PublicHealth, WorkerHealth } from '../../protocol/gateway';
import type { Gathered, GatheredWorker, WorkerReport } from './messages';

const latest = (a: string, b: string) => (a > b ? a : b);

/** One worker's line of the list. */
function workerLine(w: GatheredWorker): WorkerHealth {
  const h = w.report?.health ?? null;
  return {
    index: w.index,
    id: w.id,
    pid: w.pid,
    state: w.state,
    restarts: w.restarts,
    answered: w.report !== null,
    ready: h?.ready ?? null,
    snapshot_version: h?.snapshot_version ?? null,
    control_connected: h?.control_connected ?? null,
    journal_backlog: h?.journal_backlog ?? null,
    limit_share: h?.limit_share?.share ?? null,
    connections: w.report?.connections ?? null,
    answered_calls: w.report?.answered ?? null,
  };
}

/** The share of key limits of the whole gateway: the sum of its workers' (null while none has one). */
function shareOf(hs: readonly GatewayHealthDetail[]): GatewayHealthDetail['limit_share'] {
  const shares = hs.map((h) => h.limit_share).filter((s) => s !== null);
  if (shares.length === 0) return null;
  return {
    share: Math.min(
      1,
      shares.reduce((sum, s) => sum + s.share, 0),
    ),
    gateways: Math.max(...shares.map((s) => s.gateways)),
    mode: shares[0]!.mode,
    received_at: shares.map((s) => s.received_at).reduce(latest),
  };
}

/** Coverage of the whole gateway: covered while every worker covers, allowances and holds added up. */
function coverageOf(hs: readonly GatewayHealthDetail[]): GatewayHealthDetail['coverage'] {
  const lines = hs.map((h) => h.coverage).filter((c) => c !== null);
  if (lines.length === 0) return null;
  return {
    covered: lines.every((c) => c.covered),
    allowance: lines.reduce((sum, c) => sum + c.allowance, 0),
    held: lines.reduce((sum, c) => sum + c.held, 0),
    received_at: lines.map((c) => c.received_at).reduce(latest),
  };
}

/**
 * The whole gateway's detailed health. It serves calls when every worker that answered does
 * (a call may land on any of them) and at least one answered; its state version is the lowest a
 * worker enforces, its backlog the sum of theirs, its control connected while every worker's is.
 */
export function clusterHealth(gathered: Gathered, self: GatewayHealthDetail): GatewayHealthDetail {
  const reports = gathered.workers.map((w) => w.report).filter((r): r is WorkerReport => r !== null);
  const hs = reports.map((r) => r.health);
  const notReady = hs.find((h) => !h.ready);
  const first = hs[0];
  const ready = first !== undefined && notReady === undefined;
  const ages = hs.map((h) => h.snapshot_age_s).filter((a) => a !== null);
  return {
    status: ready ? 'ok' : 'not_ready',
    ready,
    reason: ready ? null : (notReady?.reason ?? 'no_snapshot'),
    reason_detail: ready
      ? null
      : notReady === undefined
        ? 'no worker answered'
        : `worker ${notReady.gateway_id}: ${notReady.reason_detail ?? notReady.reason ?? 'not ready'}`,
    gateway_id: gathered.id,
    engine: first?.engine ?? self.engine,
    snapshot_version: hs.length === 0 ? 0 : Math.min(...hs.map((h) => h.snapshot_version)),
    snapshot_age_s: ages.length === 0 ? null : Math.max(...ages),
    control_connected: hs.length > 0 && hs.every((h) => h.control_connected),
    control_url: first?.control_url ?? self.control_url,
    last_nack: hs.find((h) => h.last_nack !== null)?.last_nack ?? null,
    journal_backlog: hs.reduce((sum, h) => sum + h.journal_backlog, 0),
    limit_share: shareOf(hs),
    coverage: coverageOf(hs),
    workers: gathered.workers.map(workerLine),
  };
}

/** The one-word answer of the whole gateway (no credentials). */
export function clusterReadiness(detail: GatewayHealthDetail): PublicHealth {
  return detail.ready ? { status: 'ok' } : { status: 'not_ready', reason: detail.reason ?? 'no_snapshot' };
}
