/**
 * The lines of a gateway's stream outside the versioned state (not digested or acked), which the
 * hub (hub.ts) writes between whole lines, so they may fall between the lines of a snapshot:
 *
 * - `share` (protocol/snapshot.ts `ShareLine`): the gateway's share of every key's limit, when
 *   it connects and whenever control re-divides;
 * - `coverage` (`CoverageLine`): whether it covers the calls it admits, and its part of the
 *   pool's free capital, from control's evaluation of coverage (coverage.ts), when it connects
 *   and after each evaluation, only when it changed for that stream.
 */
import type { LimitsMode } from '../../protocol/gateways';
import type { CoverageLine, ShareLine } from '../../protocol/snapshot';
import type { Coverage } from '../pool';
import type { Connection } from './connection';
import { weightWith, type Member } from './shares';

/** Write `conn` its share of the key limits, divided among `gateways`. */
export function writeShareLine(conn: Connection, share: number, gateways: number, mode: LimitsMode): void {
  if (conn.closed) return;
  conn.share = share;
  const line: ShareLine = { type: 'share', share, gateways: Math.max(1, gateways), mode };
  conn.res.write(JSON.stringify(line) + '\n');
}

/**
 * A gateway's part of the free capital: its weight over the weights of the live gateways of the
 * cluster (`members`), itself counted whether or not it is live yet. Unlike the key limits,
 * whatever `limits.mode` says: money is divided, never repeated.
 */
export function coverageShare(members: readonly Member[], gatewayId: string, weight: number): number {
  const total = weightWith(members, gatewayId, weight);
  return total > 0 ? weight / total : 0;
}

/** Write `conn` its coverage line for `coverage` and `share`, unless it is the one it was last written. */
export function writeCoverageLine(conn: Connection, coverage: Coverage, share: number): void {
  if (conn.closed) return;
  const allowance = coverage.paused ? 0 : Math.max(0, Math.floor(coverage.free * share));
  const line = JSON.stringify({ type: 'coverage', covered: !coverage.paused, allowance } satisfies CoverageLine) + '\n';
  if (line === conn.coverageLine) return;
  conn.coverageLine = line;
  conn.res.write(line);
}
