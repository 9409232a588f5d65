/**
 * What the providers pages show, from the store: each provider's figures as
 * `GET /api/v1/providers` reports them (same window, same tier rules), its outcomes per hour
 * of the window from the per-minute rollups, and the order the visitor asked for. Internal
 * endpoint ids stay here (to find a provider's refunds); the pages print opaque ids only.
 */
import { SvcError } from '../../../protocol/errors';
import type { Provider, ProvidersAnswer, Tier } from '../../../protocol/public';
import type { Config } from '../../../config/load';
import type { Store } from '../../store';
import { MINUTE_MS } from '../../store/rollups';
import type { OpaqueIds } from '../../../protocol/opaque-ids';
import { providersAnswer } from '../reads';
import { CHART_OUTCOMES, slotTotals, type ChartOutcome, type SlotCounts } from './svg';

const HOUR_MS = 3_600_000;

export interface BoardProvider extends Provider {
  /** The endpoint behind the provider: never printed. */
  endpointId: string;
  /** Outcome counts per hour of the window, oldest first; null for an hour without calls. */
  hours: SlotCounts[];
  /** Failure rate per hour (null without calls). */
  hourlyRates: (number | null)[];
}

export interface Board {
  answer: ProvidersAnswer;
  providers: BoardProvider[];
  /** Start of the first hour (ms): hour i covers [start + i h, start + (i + 1) h). */
  start: number;
}

export async function providersBoard(store: Store, ids: OpaqueIds, tiers: Readonly<Config['tiers']>, now: number): Promise<Board> {
  const answer = await providersAnswer(store, ids, tiers, now);
  const fromMs = now - tiers.windowH * HOUR_MS;
  const hours = new Map<string, SlotCounts[]>();
  for (const row of await store.rollups.slots(fromMs, 60, tiers.windowH)) {
    let list = hours.get(row.endpoint_id);
    if (list === undefined) hours.set(row.endpoint_id, (list = new Array<SlotCounts>(tiers.windowH).fill(null)));
    const counts = Object.fromEntries(CHART_OUTCOMES.map((o) => [o, row.counts[o]])) as Record<ChartOutcome, number>;
    list[row.slot] = slotTotals(counts).calls === 0 ? null : counts;
  }
  const byId = new Map(answer.providers.map((p) => [p.id, p]));
  const providers = (await store.endpoints.list()).map((e): BoardProvider => {
    const p = byId.get(ids.provider(e.id))!;
    const slots = hours.get(e.id) ?? new Array<SlotCounts>(tiers.windowH).fill(null);
    const hourlyRates = slots.map((s) => {
      if (s === null) return null;
      const { calls, failures } = slotTotals(s);
      return failures / calls;
    });
    return { ...p, endpointId: e.id, hours: slots, hourlyRates };
  });
  return { answer, providers, start: Math.ceil(fromMs / MINUTE_MS) * MINUTE_MS };
}

/** The provider with opaque id `id`; 404 `svc_not_found` when there is none. */
export function boardProvider(board: Board, id: string): BoardProvider {
  const found = board.providers.find((p) => p.id === id);
  if (found === undefined) throw new SvcError('svc_not_found', 'no provider with that id');
  return found;
}

/** `2030-01-01 11:00–12:00 UTC` for hour `i` of the board. */
export function hourLabel(start: number, i: number): string {
  const from = new Date(start + i * HOUR_MS).toISOString();
  const to = new Date(start + (i + 1) * HOUR_MS).toISOString();
  return `${from.slice(0, 10)} ${from.slice(11, 16)}–${to.slice(11, 16)} UTC`;
}

// ---------------------------------------------------------------------------------------
// Order

export const SORT_KEYS = ['tier', 'failure_rate'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
export const SORT_ORDERS = ['asc', 'desc'] as const;
export type SortOrder = (typeof SORT_ORDERS)[number];

export interface Sort {
  key: SortKey;
  order: SortOrder;
}

/** The order of `/providers` when the query names none: best tier first. */
export const DEFAULT_SORT: Sort = { key: 'tier', order: 'asc' };

const TIER_RANK: Readonly<Record<Tier, number>> = { RELIABLE: 0, ELEVATED: 1, HIGH_RISK: 2, UNRATED: 3 };

/** `?sort=tier|failure_rate&order=asc|desc`; anything else is 400 `svc_bad_request`. */
export function parseSort(query: URLSearchParams): Sort {
  const key = query.get('sort') ?? DEFAULT_SORT.key;
  const order = query.get('order') ?? DEFAULT_SORT.order;
  const errors: { field: string; message: string }[] = [];
  if (!(SORT_KEYS as readonly string[]).includes(key)) errors.push({ field: 'sort', message: `must be one of ${SORT_KEYS.join(', ')}` });
  if (!(SORT_ORDERS as readonly string[]).includes(order))
    errors.push({ field: 'order', message: `must be one of ${SORT_ORDERS.join(', ')}` });
  if (errors.length > 0)
    throw new SvcError('svc_bad_request', errors.map((e) => `${e.field} ${e.message}`).join('; '), { extra: { errors } });
  return { key: key as SortKey, order: order as SortOrder };
}

/**
 * Providers in the order asked for. By tier: RELIABLE, ELEVATED, HIGH_RISK (or the reverse),
 * then by failure rate; by failure rate: lowest (or highest) first. UNRATED providers have too
 * few calls to rank, so they come last in every order. Ties go by opaque id.
 */
export function sortProviders<P extends Provider>(providers: readonly P[], sort: Sort): P[] {
  const sign = sort.order === 'asc' ? 1 : -1;
  return [...providers].sort((a, b) => {
    const unrated = Number(a.tier === 'UNRATED') - Number(b.tier === 'UNRATED');
    if (unrated !== 0) return unrated;
    const tier = TIER_RANK[a.tier] - TIER_RANK[b.tier];
    const rate = a.failure_rate - b.failure_rate;
    const primary = sort.key === 'tier' ? tier || rate : rate || tier;
    if (primary !== 0) return sign * primary;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
}
