/** The gateways table `svcctl gateways list` and `weight` print. */
import { groupWorkers, type GatewayStatus, type LimitsMode } from '../../../protocol/gateways';
import { table } from '../../output';

type Cell = string | number | null | undefined;

/**
 * Table rows for `gateways`, a gateway run as several workers shown as one row for the gateway
 * (`summary` of its workers) and its workers' rows under it, their ids indented.
 */
export function nestedRows<T extends { id: string }>(
  gateways: readonly T[],
  row: (g: T) => Cell[],
  summary: (gateway: string, workers: T[]) => Cell[],
): Cell[][] {
  const rows: Cell[][] = [];
  const grouped = groupWorkers(gateways);
  grouped.forEach((g, i) => {
    if (g.gateway !== null && grouped[i - 1]?.gateway !== g.gateway)
      rows.push([
        g.gateway,
        ...summary(
          g.gateway,
          grouped.filter((w) => w.gateway === g.gateway),
        ),
      ]);
    const cells = row(g);
    rows.push(g.gateway === null ? cells : [`  ${g.id}`, ...cells.slice(1)]);
  });
  return rows;
}

/** `2 of 3` workers for which `yes` holds. */
export function countOf<T>(workers: readonly T[], yes: (w: T) => boolean): string {
  return `${workers.filter(yes).length} of ${workers.length}`;
}

/** The latest of the workers' ISO times. */
export function latestOf(times: readonly string[]): string {
  return times.reduce((a, b) => (a > b ? a : b));
}

/** A share as a percentage with up to two decimals (`33.33%`), or `-` when it never got one. */
export function shareText(share: number | null): string {
  return share === null ? '-' : `${Math.round(share * 10_000) / 100}%`;
}

export function gatewaysTable(gateways: readonly GatewayStatus[]): string {
  return table(
    ['ID', 'CONNECTED', 'LIVE', 'WEIGHT', 'SHARE', 'APPLIED', 'ENGINE', 'LAST SEEN'],
    nestedRows(
      gateways,
      (g) => [
        g.id,
        g.connected ? 'yes' : 'no',
        g.live ? 'yes' : 'no',
        g.weight,
        shareText(g.share),
        g.applied_version,
        g.engine,
        g.last_seen,
      ],
      (_gateway, workers) => [
        countOf(workers, (w) => w.connected),
        countOf(workers, (w) => w.live),
        workers.reduce((sum, w) => sum + w.weight, 0),
        shareText(workers.some((w) => w.share !== null) ? workers.reduce((sum, w) => sum + (w.share ?? 0), 0) : null),
        Math.min(...workers.map((w) => w.applied_version)),
        workers[0]!.engine,
        latestOf(workers.map((w) => w.last_seen)),
      ],
    ),
  );
}

export function modeLine(mode: LimitsMode, leaseS: number | null): string {
  const lease = leaseS === null ? '' : `, live = acked within ${leaseS} s`;
  return mode === 'split'
    ? `limits.mode split: each key's limit is divided among the live gateways by weight${lease}`
    : `limits.mode per-gateway: every gateway enforces each key's whole limit${lease}`;
}
