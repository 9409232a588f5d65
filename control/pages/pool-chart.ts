/**
 * The pool's capital and exposure over the last 90 days, as the status and activity pages draw
 * it: inline SVG, no script, colours from the page's stylesheet, and a text alternative. One
 * point per day sampled (`pool_days`: the day's last capital, its highest exposure); a day
 * without a sample breaks the lines. Pure: a function of the days it is given.
 */
import type { PublicPool } from '../../protocol/lps';
import type { PoolDay } from '../store/lps';
import { escapeHtml, money } from './layout';

/** Days the chart spans. @default 90 */
export const POOL_CHART_DAYS = 90;
/** Geometry (SVG user units). */
const G = { width: 360, height: 90, pad: 3 } as const;
const DAY_MS = 86_400_000;
const round = (v: number): number => Math.round(v * 100) / 100;

/** `2026-11-29` for the UTC day `ms` falls in. */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The first day of the chart ending on the day of `now`. */
export const chartFrom = (now: number): string => dayOf(now - (POOL_CHART_DAYS - 1) * DAY_MS);

/** A line through each day's `figure`, broken where a day has no sample. */
function path(slots: readonly (PoolDay | undefined)[], figure: (d: PoolDay) => number, scale: number): string {
  let d = '';
  let pen = false;
  const span = G.width - 2 * G.pad;
  slots.forEach((day, i) => {
    if (day === undefined) {
      pen = false;
      return;
    }
    const x = round(G.pad + (span * i) / (slots.length - 1));
    const y = round(G.height - G.pad - ((G.height - 2 * G.pad) * Math.max(0, figure(day))) / scale);
    d += `${pen ? 'L' : 'M'}${x} ${y}`;
    pen = true;
  });
  return d;
}

/** The chart of `days` (any order; those outside the 90 days ending on `now`'s day are left out) as a figure. */
export function poolChart(days: readonly PoolDay[], now: number): string {
  const first = Date.parse(`${chartFrom(now)}T00:00:00Z`);
  const byDay = new Map(days.map((d) => [d.day, d]));
  const slots = Array.from({ length: POOL_CHART_DAYS }, (_, i) => byDay.get(dayOf(first + i * DAY_MS)));
  const sampled = slots.filter((d): d is PoolDay => d !== undefined);
  if (sampled.length === 0) return `<figure id="pool-chart"><figcaption>No history of the pool's capital yet.</figcaption></figure>`;
  const scale = Math.max(1, ...sampled.map((d) => Math.max(d.capital, d.exposure)));
  const last = sampled[sampled.length - 1]!;
  const label = `The pool's capital and its exposure per day over the last ${POOL_CHART_DAYS} days: ${sampled.length} days recorded; on ${last.day} capital ${money(last.capital)}, highest exposure ${money(last.exposure)}`;
  const bottom = G.height - G.pad;
  const capital = path(slots, (d) => d.capital, scale);
  const exposure = path(slots, (d) => d.exposure, scale);
  return `<figure id="pool-chart"><svg class="pool-chart" viewBox="0 0 ${G.width} ${G.height}" role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title><line class="base" x1="${G.pad}" x2="${G.width - G.pad}" y1="${bottom}" y2="${bottom}"/><path class="capital" d="${capital}"/><path class="exposure" d="${exposure}"/></svg>
<figcaption><span class="key-capital">capital</span> and <span class="key-exposure">exposure</span> per day, the last ${POOL_CHART_DAYS} days (top of the scale ${money(scale)})</figcaption></figure>`;
}

/**
 * The pool's capital in a sentence: what is locked against exposure, what is free, who owns it (a
 * count), and whether coverage is paused.
 */
export function poolWords(p: PublicPool): string {
  const providers = `${p.providers} liquidity provider${p.providers === 1 ? '' : 's'}`;
  const pending =
    p.pending_withdrawals === 0 ? '' : `, ${p.pending_withdrawals} withdrawal${p.pending_withdrawals === 1 ? '' : 's'} pending`;
  const paused = p.paused
    ? '; <strong class="paused">coverage paused</strong>: new calls are admitted uncovered (no premium, no refund)'
    : '';
  return `${money(p.locked)} locked against an exposure of ${money(p.exposure)}, ${money(p.free)} free; ${providers} at ${p.value_per_share} a share${pending}${paused}`;
}
