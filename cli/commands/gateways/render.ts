/** The gateways table `svcctl gateways list` and `weight` print. */
import type { GatewayStatus, LimitsMode } from '../../../protocol/gateways';
import { table } from '../../output';

/** A share as a percentage with up to two decimals (`33.33%`), or `-` when it never got one. */
export function shareText(share: number | null): string {
  return share === null ? '-' : `${Math.round(share * 10_000) / 100}%`;
}

export function gatewaysTable(gateways: readonly GatewayStatus[]): string {
  return table(
    ['ID', 'CONNECTED', 'LIVE', 'WEIGHT', 'SHARE', 'APPLIED', 'ENGINE', 'LAST SEEN'],
    gateways.map((g) => [
      g.id,
      g.connected ? 'yes' : 'no',
      g.live ? 'yes' : 'no',
      g.weight,
      shareText(g.share),
      g.applied_version,
      g.engine,
      g.last_seen,
    ]),
  );
}

export function modeLine(mode: LimitsMode, leaseS: number | null): string {
  const lease = leaseS === null ? '' : `, live = acked within ${leaseS} s`;
  return mode === 'split'
    ? `limits.mode split: each key's limit is divided among the live gateways by weight${lease}`
    : `limits.mode per-gateway: every gateway enforces each key's whole limit${lease}`;
}
