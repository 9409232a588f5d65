/**
 * The answers of the public read API, built from the store: providers (tier and failure rate
 * over the rolling window, from the per-minute rollups), and the public changelog. Pure
 * functions of the store, the settings and a clock reading; caching is the caller's job.
 */
import { COVERED_FAILURES, OUTCOMES, UNRATED_OUTCOMES, type Outcome } from '../../protocol/outcome';
import type { Provider, ProvidersAnswer, PublicChangelogEntry, Tier } from '../../protocol/public';
import type { Config } from '../../config/load';
import type { Store } from '../store';
import { LATENCY_BOUNDS_MS, type EndpointWindow } from '../store/rollups';
import type { OpaqueIds } from '../../protocol/opaque-ids';

type Tiers = Readonly<Config['tiers']>;

/** The tier for a failure rate over `calls` calls (docs/design.md §7). */
export function tierFor(failureRate: number, calls: number, tiers: Tiers): Tier {
  if (calls < tiers.minCalls) return 'UNRATED';
  if (failureRate < tiers.reliableBelow) return 'RELIABLE';
  if (failureRate <= tiers.elevatedUpTo) return 'ELEVATED';
  return 'HIGH_RISK';
}

/**
 * The `q` quantile (0..1) of a histogram aligned with `LATENCY_BOUNDS_MS` (plus overflow),
 * interpolated linearly inside the bucket that holds it; the overflow bucket answers its
 * lower bound. Null for an empty histogram.
 */
export function histogramQuantile(buckets: readonly number[], q: number): number | null {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < buckets.length; i++) {
    const n = buckets[i]!;
    if (n > 0 && below + n >= rank) {
      const lo = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      const hi = LATENCY_BOUNDS_MS[i];
      if (hi === undefined) return lo;
      return Math.round(lo + ((hi - lo) * (rank - below)) / n);
    }
    below += n;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
}

const EMPTY_COUNTS = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;

function provider(
  ids: OpaqueIds,
  endpoint: { id: string; display_name: string | null },
  window: EndpointWindow | undefined,
  tiers: Tiers,
): Provider {
  const counts = window?.counts ?? EMPTY_COUNTS;
  let calls = 0;
  let failures = 0;
  for (const outcome of OUTCOMES) {
    if (UNRATED_OUTCOMES.has(outcome)) continue;
    calls += counts[outcome];
    if (COVERED_FAILURES.has(outcome)) failures += counts[outcome];
  }
  const failureRate = calls === 0 ? 0 : Math.round((failures / calls) * 1e6) / 1e6;
  const p50 = window ? histogramQuantile(window.latency, 0.5) : null;
  const p95 = window ? histogramQuantile(window.latency, 0.95) : null;
  const p99 = window ? histogramQuantile(window.latency, 0.99) : null;
  return {
    id: ids.provider(endpoint.id),
    display_name: endpoint.display_name ?? null,
    tier: tierFor(failures / Math.max(1, calls), calls, tiers),
    failure_rate: failureRate,
    calls,
    failures,
    client_errors: counts.client_error,
    caller_errors: counts.caller_error,
    window_h: tiers.windowH,
    latency_ms: p50 === null || p95 === null || p99 === null ? null : { p50, p95, p99 },
  };
}

/** Every registered endpoint as a provider, over the window ending at `now`. */
export async function providersAnswer(store: Store, ids: OpaqueIds, tiers: Tiers, now: number): Promise<ProvidersAnswer> {
  const windows = new Map((await store.rollups.window(now - tiers.windowH * 3_600_000)).map((w) => [w.endpoint_id, w]));
  const providers = (await store.endpoints.list())
    .map((e) => provider(ids, e, windows.get(e.id), tiers))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return {
    providers,
    window_h: tiers.windowH,
    min_calls: tiers.minCalls,
    thresholds: { reliable_below: tiers.reliableBelow, elevated_up_to: tiers.elevatedUpTo },
    updated_at: new Date(now).toISOString(),
  };
}

export async function publicChangelog(store: Store, limit: number): Promise<PublicChangelogEntry[]> {
  return (await store.changelog.list(limit)).map(({ id, at, kind, text }) => ({ id, at, kind, text }));
}
