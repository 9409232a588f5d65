/**
 * The lines of a gateway's stream outside the versioned state (not digested or acked), which the
 * hub (hub.ts) writes between whole lines, so they may fall between the lines of a snapshot:
 *
 * - `share` (protocol/snapshot.ts `ShareLine`): the gateway's share of every key's limit, when
 *   it connects and whenever control re-divides;
 * - `coverage` (`CoverageLine`): whether it covers the calls it admits, and its part of the
 *   pool's free capital, from control's evaluation of coverage (coverage.ts), when it connects
 *   and after each evaluation, only when it changed for that stream;
 * - `ingested` (`IngestedLine`), right before each `coverage` line, in the same write: the
 *   outcome batches of this process the evaluation had seen (../ingest-seq.ts), so the gateway can
 *   stop counting the failures of those batches against the allowance. A line of its own, since
 *   gateways older than it refuse a `coverage` line with a member more but pass over a line type
 *   they do not know.
 */
import type { LimitsMode } from '../../protocol/gateways';
import type { CoverageLine, IngestedLine, ShareLine } from '../../protocol/snapshot';
import type { Coverage } from '../pool';
import type { Connection } from './connection';
import type { IngestMark } from '../ingest-seq';
import { coverageAllowance, type Member } from './shares';

/** Write `conn` its share of the key limits, divided among `gateways`. */
export function writeShareLine(conn: Connection, share: number, gateways: number, mode: LimitsMode): void {
  if (conn.closed) return;
  conn.share = share;
  const line: ShareLine = { type: 'share', share, gateways: Math.max(1, gateways), mode };
  conn.res.write(JSON.stringify(line) + '\n');
}

/**
 * How often a coverage line is written again though it did not change. A gateway counts each
 * failure it recorded against the allowance until a line reflects it; a failure that leaves the
 * free capital as it was (an endpoint with an hourly cap, whose remainder is locked already)
 * brings no new line, so the same line again (after a newer `ingested` line) lets it go.
 * @default 10 s
 */
export const COVERAGE_REFRESH_MS = 10_000;

/** Control's evaluation of coverage, with what this process had ingested when it started (null: not said). */
export interface CoverageEvaluation {
  coverage: Coverage;
  seen: IngestMark | null;
}

/**
 * Write `conn` its coverage line for `coverage`, its allowance its part of the free capital among
 * `members` (the live gateways of the cluster, itself counted: `coverageAllowance`, whatever
 * `limits.mode` says, since money is divided, never repeated), unless it is the line it was last
 * written less than {@link COVERAGE_REFRESH_MS} before `now`. With `seen` (what the evaluation
 * had ingested when it started), the `ingested` line first, in the same write. A line skipped
 * because it did not change skips its `ingested` line too: the gateway keeps counting the
 * failures since its last line until the next one, which errs on the side of covering less.
 */
export function writeCoverageLine(conn: Connection, { coverage, seen }: CoverageEvaluation, members: readonly Member[], now: number): void {
  if (conn.closed) return;
  const allowance = coverage.paused ? 0 : coverageAllowance(coverage.free, coverage.largest_call, members, conn.gatewayId);
  const line = JSON.stringify({ type: 'coverage', covered: !coverage.paused, allowance } satisfies CoverageLine) + '\n';
  if (line === conn.coverageLine && now - conn.coverageAt < COVERAGE_REFRESH_MS) return;
  conn.coverageLine = line;
  conn.coverageAt = now;
  if (seen === null) conn.res.write(line);
  else conn.res.write(JSON.stringify({ type: 'ingested', instance: seen.instance, seq: seen.seq } satisfies IngestedLine) + '\n' + line);
}
