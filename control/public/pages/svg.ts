/**
 * The charts of the public pages, drawn on the server as inline SVG: a failure-rate sparkline
 * per provider and an hourly bar chart of outcomes. No charting library and no script; colours
 * come from classes of the page's stylesheet (so both colour schemes apply), and every chart
 * carries a text alternative. Pure functions of the numbers they are given.
 */
import type { Tier } from '../../../protocol/public';
import { escapeHtml, percent } from '../../pages/layout';

/** The outcomes a provider's chart stacks, bottom to top: the calls its failure rate counts. */
export const CHART_OUTCOMES = ['ok', 'latency_breach', 'server_error', 'network_error', 'schema_mismatch'] as const;
export type ChartOutcome = (typeof CHART_OUTCOMES)[number];

export const OUTCOME_LABELS: Readonly<Record<ChartOutcome, string>> = {
  ok: 'ok',
  latency_breach: 'latency breach',
  server_error: 'server error',
  network_error: 'network error',
  schema_mismatch: 'schema mismatch',
};

/** One slot (hour) of a provider's window: the chart outcomes' counts, or null without calls. */
export type SlotCounts = Readonly<Record<ChartOutcome, number>> | null;

/** Sparkline geometry (SVG user units). */
export const SPARK = { width: 120, height: 28, pad: 2 } as const;

/** Rated calls and covered failures of a slot. */
export function slotTotals(counts: Readonly<Record<ChartOutcome, number>>): { calls: number; failures: number } {
  const calls = CHART_OUTCOMES.reduce((n, o) => n + counts[o], 0);
  return { calls, failures: calls - counts.ok };
}

/** The top of a sparkline's scale: the highest hourly rate, and at least `floor`. */
export function sparkScale(rates: readonly (number | null)[], floor: number): number {
  return Math.max(floor, ...rates.map((r) => r ?? 0));
}

/** x of slot `i` of `n` on the sparkline. */
export function sparkX(i: number, n: number): number {
  const span = SPARK.width - 2 * SPARK.pad;
  return round(SPARK.pad + (n <= 1 ? span : (span * i) / (n - 1)));
}

/** y of `rate` on a sparkline whose top is `scale`. */
export function sparkY(rate: number, scale: number): number {
  return round(SPARK.height - SPARK.pad - ((SPARK.height - 2 * SPARK.pad) * rate) / scale);
}

const round = (v: number): number => Math.round(v * 100) / 100;

export interface SparkOptions {
  floor: number;
  limit: number;
  windowH: number;
}

/**
 * The failure rate per hour as a line over the window, one point per hour with calls (an hour
 * without calls breaks the line), on a scale from 0 to the highest hourly rate or `floor`,
 * whichever is higher; a dashed line marks `limit` (where HIGH_RISK starts) when it fits.
 */
export function sparkline(rates: readonly (number | null)[], opts: SparkOptions): string {
  const n = rates.length;
  const scale = sparkScale(rates, opts.floor);
  const rated = rates.filter((r): r is number => r !== null);
  const label =
    rated.length === 0
      ? `No calls in the last ${opts.windowH} h`
      : `Failure rate per hour over the last ${opts.windowH} h: highest ${percent(Math.max(...rated))}, latest ${percent(rated[rated.length - 1]!)}, ${rated.length} of ${n} hours with calls`;
  let d = '';
  let pen = false;
  const points: string[] = [];
  rates.forEach((rate, i) => {
    if (rate === null) {
      pen = false;
      return;
    }
    const x = sparkX(i, n);
    const y = sparkY(rate, scale);
    d += `${pen ? 'L' : 'M'}${x} ${y}`;
    pen = true;
    points.push(`<circle class="pt" cx="${x}" cy="${y}" r="1.4"/>`);
  });
  const bottom = SPARK.height - SPARK.pad;
  const limit =
    opts.limit <= scale
      ? `<line class="limit" x1="${SPARK.pad}" x2="${SPARK.width - SPARK.pad}" y1="${sparkY(opts.limit, scale)}" y2="${sparkY(opts.limit, scale)}"/>`
      : '';
  return `<svg class="spark" viewBox="0 0 ${SPARK.width} ${SPARK.height}" width="${SPARK.width}" height="${SPARK.height}" role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title><line class="base" x1="${SPARK.pad}" x2="${SPARK.width - SPARK.pad}" y1="${bottom}" y2="${bottom}"/>${limit}${d ? `<path class="line" d="${d}"/>` : ''}${points.join('')}</svg>`;
}

/**
 * A sparkline as a table cell or figure shows it: the line with the latest hourly rate as text
 * beside it (an hour of data is a single dot, which says little alone), or, without a call in
 * the window, the words "no calls in the last N h" instead of an empty frame.
 */
export function sparkCell(rates: readonly (number | null)[], opts: SparkOptions): string {
  const rated = rates.filter((r): r is number => r !== null);
  if (rated.length === 0) return `<span class="spark-none">no calls in the last ${opts.windowH} h</span>`;
  return `<span class="spark-box">${sparkline(rates, opts)}<span class="spark-now">latest ${percent(rated[rated.length - 1]!)}</span></span>`;
}

/** Bar chart geometry (SVG user units). */
export const BARS = { width: 480, height: 150, left: 4, right: 4, top: 4, bottom: 4 } as const;

/**
 * Outcomes per hour as stacked bars (ok at the bottom, then latency breach, server error,
 * network error, schema mismatch), one bar per hour with calls, on a scale from 0 to the
 * busiest hour. `labels[i]` names slot i (its hour) in the bar's tooltip.
 */
export function hourlyBars(slots: readonly SlotCounts[], labels: readonly string[], windowH: number): string {
  const n = slots.length;
  const plotW = BARS.width - BARS.left - BARS.right;
  const plotH = BARS.height - BARS.top - BARS.bottom;
  const totals = slots.map((s) => (s === null ? 0 : slotTotals(s).calls));
  const max = Math.max(1, ...totals);
  const step = plotW / Math.max(1, n);
  const barW = round(Math.max(1, step * 0.78));
  const bars: string[] = [];
  slots.forEach((slot, i) => {
    if (slot === null || totals[i] === 0) return;
    const x = round(BARS.left + step * i + (step - barW) / 2);
    let y = BARS.top + plotH;
    const rects: string[] = [];
    for (const outcome of CHART_OUTCOMES) {
      const count = slot[outcome];
      if (count === 0) continue;
      const h = (plotH * count) / max;
      y -= h;
      rects.push(`<rect class="o-${outcome}" x="${x}" y="${round(y)}" width="${barW}" height="${round(h)}"/>`);
    }
    const parts = CHART_OUTCOMES.filter((o) => slot[o] > 0).map((o) => `${slot[o]} ${OUTCOME_LABELS[o]}`);
    bars.push(
      `<g class="bar" data-slot="${i}" data-calls="${totals[i]}"><title>${escapeHtml(`${labels[i] ?? ''}: ${totals[i]} calls (${parts.join(', ')})`)}</title>${rects.join('')}</g>`,
    );
  });
  const busiest = Math.max(0, ...totals);
  const label =
    bars.length === 0
      ? `No calls in the last ${windowH} h`
      : `Calls per hour over the last ${windowH} h by outcome: ${bars.length} hours with calls, busiest ${busiest} calls`;
  const baseY = BARS.top + plotH;
  return `<div class="chart-box"><p class="axis axis-y" aria-hidden="true">${max} ${max === 1 ? 'call' : 'calls'}</p><svg class="chart" viewBox="0 0 ${BARS.width} ${BARS.height}" role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title>
<line class="axis" x1="${BARS.left}" x2="${BARS.width - BARS.right}" y1="${baseY}" y2="${baseY}"/><line class="axis" x1="${BARS.left}" x2="${BARS.left}" y1="${BARS.top}" y2="${baseY}"/>
${bars.join('\n')}
</svg>${axisX(`${windowH} h ago`, 'now')}</div>`;
}

/**
 * The labels under a chart, as HTML text at the body's size (SVG text shrinks with the chart,
 * to a few pixels on a phone); hidden from screen readers, which read the chart's label.
 */
export const axisX = (from: string, to: string): string =>
  `<p class="axis axis-x" aria-hidden="true"><span>${escapeHtml(from)}</span><span>${escapeHtml(to)}</span></p>`;

/** Daily bar geometry (SVG user units): one bar per day, full height. */
export const DAYS_BAR = { width: 540, height: 34, gap: 1 } as const;

/** One day of the daily bars: its start (ms), its calls and failures, and the tier its rate falls in (null without calls). */
export interface DayBar {
  start: number;
  calls: number;
  failures: number;
  tier: Tier | null;
}

const dayName = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/**
 * The failure rate per UTC day as a row of bars (oldest left), each coloured by the tier its
 * rate falls in (UNRATED under the tiers' minimum of calls, drawn hatched), and a gap for a day
 * without calls. Each bar's tooltip gives the day, its rate and calls; the chart's label counts
 * the days per tier.
 */
export function dailyBars(days: readonly DayBar[], id: string): string {
  const step = DAYS_BAR.width / Math.max(1, days.length);
  const w = round(Math.max(1, step - DAYS_BAR.gap));
  const count: Partial<Record<Tier | 'none', number>> = {};
  const bars = days.map((d, i) => {
    const key = d.tier ?? 'none';
    count[key] = (count[key] ?? 0) + 1;
    if (d.tier === null) return '';
    const words = `${dayName(d.start)}: ${percent(d.failures / d.calls)} failed of ${d.calls} ${d.calls === 1 ? 'call' : 'calls'} (${d.tier})`;
    return `<rect class="day day-${d.tier}" data-day="${dayName(d.start)}" x="${round(i * step)}" y="0" width="${w}" height="${DAYS_BAR.height}"><title>${escapeHtml(words)}</title></rect>`;
  });
  const parts = (['RELIABLE', 'ELEVATED', 'HIGH_RISK', 'UNRATED'] as const)
    .filter((t) => count[t])
    .map((t) => `${count[t]} ${t}`)
    .concat(count.none ? [`${count.none} without calls`] : []);
  const label = `Failure rate per day over the last ${days.length} days: ${parts.join(', ')}`;
  return `<div class="chart-box days-box"><svg class="days" id="${escapeHtml(id)}" viewBox="0 0 ${DAYS_BAR.width} ${DAYS_BAR.height}" preserveAspectRatio="none" role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title><line class="axis" x1="0" x2="${DAYS_BAR.width}" y1="${DAYS_BAR.height - 0.5}" y2="${DAYS_BAR.height - 0.5}"/>${bars.join('')}</svg>${axisX(`${days.length} days ago`, 'today')}</div>`;
}
