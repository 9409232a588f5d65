/**
 * Per-endpoint, per-minute rollups of call outcomes (migration 4): counts by outcome and a
 * fixed latency histogram. Outcome ingest adds to them, in its own transaction, only the rows
 * it actually inserted (`sql/outcomes.ts`), so a replayed batch never counts a call twice.
 * `window` and `slots` sum the minutes of a rolling window; nothing here reads the raw outcomes.
 */
import { OUTCOMES, UNRATED_OUTCOMES, type Outcome } from '../../protocol/outcome';

/**
 * Upper bounds (inclusive, ms) of the latency histogram; one more bucket holds the rest.
 * Column `lat_le_<bound>` per bound and `lat_gt_60000`, fixed by migration 4: changing them
 * needs a new migration.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  1, 2, 5, 10, 20, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 20000, 30000, 60000,
];
export const LATENCY_COLUMNS = [
  ...LATENCY_BOUNDS_MS.map((b) => `lat_le_${b}`),
  `lat_gt_${LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]}`,
];
/** One count column per outcome (`caller_error` since migration 7). */
export const OUTCOME_COLUMNS: readonly Outcome[] = OUTCOMES;
/** Every count column of a rollup row, in `RollupGroup.counts` order. */
export const COUNT_COLUMNS = [...OUTCOME_COLUMNS, ...LATENCY_COLUMNS];

export const MINUTE_MS = 60_000;

/** What a rollup needs from one inserted outcome. */
export interface RollupInput {
  endpoint_id: string;
  started_ms: number;
  outcome: Outcome;
  latency_ms: number;
}

/** One endpoint's sums over a window. */
export interface EndpointWindow {
  endpoint_id: string;
  counts: Record<Outcome, number>;
  /** Calls per latency bucket, aligned with `LATENCY_BOUNDS_MS` plus the overflow bucket. */
  latency: number[];
}

/** Index of the histogram bucket for `latencyMs`. */
export function latencyBucket(latencyMs: number): number {
  let lo = 0;
  let hi = LATENCY_BOUNDS_MS.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (latencyMs <= LATENCY_BOUNDS_MS[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** What one endpoint-minute's rollup row gains from a set of inserted outcomes. */
export interface RollupGroup {
  endpoint_id: string;
  minute: number;
  /** Aligned with `COUNT_COLUMNS`: the outcome counts, then the latency histogram. */
  counts: number[];
}

/** Group inserted outcomes by endpoint and minute: the rollup rows an ingest adds to, one per group. */
export function rollupGroups(rows: readonly RollupInput[]): RollupGroup[] {
  const groups = new Map<string, RollupGroup>();
  for (const row of rows) {
    const minute = Math.floor(row.started_ms / MINUTE_MS);
    const id = `${minute}\u0000${row.endpoint_id}`;
    let group = groups.get(id);
    if (group === undefined) {
      group = { endpoint_id: row.endpoint_id, minute, counts: new Array<number>(COUNT_COLUMNS.length).fill(0) };
      groups.set(id, group);
    }
    group.counts[OUTCOME_COLUMNS.indexOf(row.outcome)]! += 1;
    if (!UNRATED_OUTCOMES.has(row.outcome)) group.counts[OUTCOME_COLUMNS.length + latencyBucket(row.latency_ms)]! += 1;
  }
  return [...groups.values()];
}

/** One endpoint's outcome counts in one slot of a window cut into equal slots. */
export interface EndpointSlot {
  endpoint_id: string;
  /** 0 for the oldest slot of the window. */
  slot: number;
  counts: Record<Outcome, number>;
}

/** A `slots` row (endpoint, slot, then the outcome sums) as the slot it describes. */
export function slotOf(row: unknown[]): EndpointSlot {
  const counts = {} as Record<Outcome, number>;
  OUTCOME_COLUMNS.forEach((name, i) => (counts[name] = Number(row[2 + i] ?? 0)));
  return { endpoint_id: String(row[0]), slot: Number(row[1]), counts };
}

/** A `window` row (endpoint, then the sums of `COUNT_COLUMNS`) as the endpoint's window. */
export function windowOf(row: unknown[]): EndpointWindow {
  const counts = {} as Record<Outcome, number>;
  OUTCOME_COLUMNS.forEach((name, i) => (counts[name] = Number(row[1 + i] ?? 0)));
  const latency = LATENCY_COLUMNS.map((_, i) => Number(row[1 + OUTCOME_COLUMNS.length + i] ?? 0));
  return { endpoint_id: String(row[0]), counts, latency };
}

export interface RollupsTable {
  /**
   * Outcome counts per endpoint over the same minutes as `window(fromMs)`, cut into `slots`
   * slots of `slotMinutes` each, oldest first (the hours of the public pages' charts). Minutes
   * past the last slot (the window's end falls on a minute boundary) count in the last one, so
   * the slots of an endpoint add up to its window. Slots without calls are not returned.
   */
  slots(fromMs: number, slotMinutes: number, slots: number): Promise<EndpointSlot[]>;
  /**
   * Sums per endpoint, by endpoint id, over the minutes that start at or after `fromMs` (the
   * oldest, partial minute of a window that does not start on a minute boundary is left out).
   */
  window(fromMs: number): Promise<EndpointWindow[]>;
}
