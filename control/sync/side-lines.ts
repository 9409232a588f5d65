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
import { coverageAllowance, type Member } from './shares';

/** Write `conn` its share of the key limits, divided among `gateways`. */
export function writeShareLine(conn: Connection, share: number, gateways: number, mode: LimitsMode): void {
  if (conn.closed) return;
  conn.share = share;
  const line: ShareLine = { type: 'share', share, gateways: Math.max(1, gateways), mode };
  conn.res.write(JSON.stringify(line) + '\n');
}

/**
 * How often a coverage line is written again though it did not change. A gateway counts the
 * failures it recorded since its last line against the allowance; a failure that leaves the free
 * capital as it was (an endpoint with an hourly cap, whose remainder is locked already) brings no
 * new line, so the same line again restarts that count. @default 10 s
 */
export const COVERAGE_REFRESH_MS = 10_000;

/**
 * Write `conn` its coverage line for `coverage`, its allowance its part of the free capital among
 * `members` (the live gateways of the cluster, itself counted: `coverageAllowance`, whatever
 * `limits.mode` says, since money is divided, never repeated), unless it is the line it was last
 * written less than {@link COVERAGE_REFRESH_MS} before `now`.
 */
export function writeCoverageLine(conn: Connection, coverage: Coverage, members: readonly Member[], now: number): void {
  if (conn.closed) return;
  const allowance = coverage.paused ? 0 : coverageAllowance(coverage.free, coverage.largest_call, members, conn.gatewayId);
  const line = JSON.stringify({ type: 'coverage', covered: !coverage.paused, allowance } satisfies CoverageLine) + '\n';
  if (line === conn.coverageLine && now - conn.coverageAt < COVERAGE_REFRESH_MS) return;
  conn.coverageLine = line;
  conn.coverageAt = now;
  conn.res.write(line);
}
