/**
 * The history of the status pages: each provider's failure rate per UTC day over the last
 * {@link HISTORY_DAYS} days (from the per-minute rollups, cut into days), rated with the tier
 * rules of `GET /api/v1/providers` (`tierFor`, so a day with fewer than `tiers.minCalls`
 * calls is UNRATED), its uptime over 30 and 90 days (1 − the failure rate over the period's
 * calls), and the incidents: every maintenance period (from the `maintenance_mode` flag's
 * changelog entries) and every day a provider was HIGH_RISK, newest first. Pure functions of
 * the store, the settings and a clock reading; caching is the caller's job.
 */
import type { ChangelogEntry } from '../../../protocol/admin';
import type { ProvidersAnswer, Tier } from '../../../protocol/public';
import type { Config } from '../../../config/load';
import type { PoolDay } from '../../store/lps';
import { chartFrom } from '../../pages/pool-chart';
import type { Store } from '../../store';
import type { OpaqueIds } from '../../../protocol/opaque-ids';
import { tierFor } from '../reads';
import { CHART_OUTCOMES, slotTotals } from './svg';

export const DAY_MS = 86_400_000;
/** Days of history per provider. @default 90 */
export const HISTORY_DAYS = 90;
/** The shorter uptime period, in days. @default 30 */
export const UPTIME_SHORT_DAYS = 30;
/** Maintenance changes read for the incident history (each period is two). @default 200 */
export const MAINTENANCE_ENTRIES = 200;

/** One UTC day of a provider's history. */
export interface HistoryDay {
  /** Start of the day (ms, UTC midnight). */
  start: number;
  calls: number;
  failures: number;
  /** Null without calls (a gap). */
  rate: number | null;
  /** The tier that day's rate falls in (UNRATED under `tiers.minCalls` calls); null without calls. */
  tier: Tier | null;
}

export interface ProviderHistory {
  /** Opaque provider id. */
  id: string;
  display_name: string | null;
  /** Oldest first; the last is today (so far). */
  days: HistoryDay[];
  /** 1 − failure rate over the last 30 days' calls; null without calls. */
  uptime30: number | null;
  /** The same over all {@link HISTORY_DAYS} days. */
  uptime90: number | null;
}

export interface Incident {
  kind: 'maintenance' | 'high_risk';
  /** Stable within the install: the changelog entry that opened a maintenance period, or `<provider>:<day>`. */
  key: string;
  /** ISO 8601. */
  start: string;
  /** ISO 8601; null while it lasts. */
  end: string | null;
  /** Milliseconds from start to end (or to now while it lasts). */
  duration_ms: number;
  /** The provider of a HIGH_RISK day (opaque id), with its display name. */
  provider: { id: string; display_name: string | null } | null;
  /** The operators' note for a maintenance period; the day's figures for a HIGH_RISK day. */
  note: string | null;
}

export interface History {
  /** The tier rules the days are rated by, as `GET /api/v1/providers` states them. */
  rules: Pick<ProvidersAnswer, 'thresholds' | 'min_calls' | 'window_h'>;
  providers: ProviderHistory[];
  incidents: Incident[];
  /** Start of the oldest day shown (ms). */
  from: number;
  now: number;
  /** The pool's capital and exposure per day over the same days (`pool_days`). */
  poolDays: PoolDay[];
}

type Tiers = Readonly<Config['tiers']>;
type DayCounts = { calls: number; failures: number };

/** Start of the UTC day holding `ms`. */
export const dayStart = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;

/** 1 − failures / calls over `days`; null without calls. */
export function uptime(days: readonly HistoryDay[]): number | null {
  let calls = 0;
  let failures = 0;
  for (const d of days) {
    calls += d.calls;
    failures += d.failures;
  }
  return calls === 0 ? null : 1 - failures / calls;
}

/** The days of one provider from its slots' counts (slot i = day i of the history). */
export function historyDays(from: number, counts: ReadonlyMap<number, DayCounts>, tiers: Tiers): HistoryDay[] {
  return Array.from({ length: HISTORY_DAYS }, (_, i): HistoryDay => {
    const c = counts.get(i) ?? { calls: 0, failures: 0 };
    const rate = c.calls === 0 ? null : c.failures / c.calls;
    return { start: from + i * DAY_MS, ...c, rate, tier: rate === null ? null : tierFor(rate, c.calls, tiers) };
  });
}

const NOTE_PREFIX = /^maintenance_mode turned (on|off)(: )?/;

/** The operators' note in a `maintenance_mode` changelog entry's text (`… turned on: <note>`). */
const noteOf = (e: ChangelogEntry): string | null => e.text.replace(NOTE_PREFIX, '').trim() || null;

/**
 * Maintenance periods from the flag's changes (newest first, as the store lists them): each
 * turn on opens one, the next turn off closes it; repeated changes to the same value (a note
 * edited while on) stay in the period they fall in.
 */
export function maintenancePeriods(changes: readonly ChangelogEntry[], now: number): Incident[] {
  const periods: Incident[] = [];
  let open: { entry: ChangelogEntry; notes: string[] } | null = null;
  const close = (end: ChangelogEntry | null) => {
    if (open === null) return;
    const startMs = Date.parse(open.entry.at);
    const endMs = end === null ? now : Date.parse(end.at);
    const endNote = end === null ? null : noteOf(end);
    const notes = endNote === null ? open.notes : [...open.notes, `ended: ${endNote}`];
    periods.push({
      kind: 'maintenance',
      key: `maintenance:${open.entry.id}`,
      start: open.entry.at,
      end: end === null ? null : end.at,
      duration_ms: Math.max(0, endMs - startMs),
      provider: null,
      note: notes.length === 0 ? null : notes.join('; '),
    });
    open = null;
  };
  for (const e of [...changes].reverse()) {
    if (e.value === true) {
      const note = noteOf(e);
      if (open === null) open = { entry: e, notes: [] };
      if (note !== null && !open.notes.includes(note)) open.notes.push(note);
    } else close(e);
  }
  close(null);
  return periods;
}

/** Every HIGH_RISK day of every provider, as incidents. */
export function highRiskDays(providers: readonly ProviderHistory[], now: number): Incident[] {
  return providers.flatMap((p) =>
    p.days
      .filter((d) => d.tier === 'HIGH_RISK')
      .map((d): Incident => {
        const end = Math.min(now, d.start + DAY_MS);
        return {
          kind: 'high_risk',
          key: `high_risk:${p.id}:${new Date(d.start).toISOString().slice(0, 10)}`,
          start: new Date(d.start).toISOString(),
          end: d.start + DAY_MS > now ? null : new Date(end).toISOString(),
          duration_ms: end - d.start,
          provider: { id: p.id, display_name: p.display_name },
          note: `failure rate ${Number((d.rate! * 100).toFixed(2))} % (${d.failures} of ${d.calls} calls failed)`,
        };
      }),
  );
}

/** Newest first; ties (a maintenance period and a day starting together) by key. */
const newestFirst = (a: Incident, b: Incident): number =>
  Date.parse(b.start) - Date.parse(a.start) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** The providers' daily history and the incidents, as of `now`. */
export async function providersHistory(store: Store, ids: OpaqueIds, tiers: Tiers, now: number): Promise<History> {
  const from = dayStart(now) - (HISTORY_DAYS - 1) * DAY_MS;
  const counts = new Map<string, Map<number, DayCounts>>();
  for (const row of await store.rollups.slots(from, DAY_MS / 60_000, HISTORY_DAYS)) {
    let days = counts.get(row.endpoint_id);
    if (days === undefined) counts.set(row.endpoint_id, (days = new Map<number, DayCounts>()));
    const chart = Object.fromEntries(CHART_OUTCOMES.map((o) => [o, row.counts[o]])) as Parameters<typeof slotTotals>[0];
    days.set(row.slot, slotTotals(chart));
  }
  const providers = (await store.endpoints.list())
    .map((e): ProviderHistory => {
      const days = historyDays(from, counts.get(e.id) ?? new Map<number, DayCounts>(), tiers);
      return {
        id: ids.provider(e.id),
        display_name: e.display_name ?? null,
        days,
        uptime30: uptime(days.slice(-UPTIME_SHORT_DAYS)),
        uptime90: uptime(days),
      };
    })
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const maintenance = maintenancePeriods(await store.changelog.byFlag('maintenance_mode', MAINTENANCE_ENTRIES), now);
  const incidents = [...maintenance, ...highRiskDays(providers, now)].sort(newestFirst);
  const rules = {
    thresholds: { reliable_below: tiers.reliableBelow, elevated_up_to: tiers.elevatedUpTo },
    min_calls: tiers.minCalls,
    window_h: tiers.windowH,
  };
  return { rules, providers, incidents, from, now, poolDays: await store.lps.days(chartFrom(now)) };
}
