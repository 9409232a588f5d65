/**
 * The charts of the public pages, drawn on the server as inline SVG: a failure-rate sparkline
 * per provider and an hourly bar chart of outcomes. No charting library and no script; colours
 * come from classes of the page's stylesheet (so both colour schemes apply), and every chart
 * carries a text alternative. Pure functions of the numbers they are given.
 */
import { escapeHtml, percent } from './layout';

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

/**
 * The failure rate per hour as a line over the window, one point per hour with calls (an hour
 * without calls breaks the line), on a scale from 0 to the highest hourly rate or `floor`,
 * whichever is higher; a dashed line marks `limit` (where HIGH_RISK starts) when it fits.
 */
export function sparkline(rates: readonly (number | null)[], opts: { floor: number; limit: number; windowH: number }): string {
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

/** Bar chart geometry (SVG user units). */
export const BARS = { width: 480, height: 170, left: 34, right: 4, top: 8, bottom: 20 } as const;

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
  return `<svg class="chart" viewBox="0 0 ${BARS.width} ${BARS.height}" role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title>
<line class="axis" x1="${BARS.left}" x2="${BARS.width - BARS.right}" y1="${baseY}" y2="${baseY}"/><line class="axis" x1="${BARS.left}" x2="${BARS.left}" y1="${BARS.top}" y2="${baseY}"/>
<text x="${BARS.left - 4}" y="${BARS.top + 8}" text-anchor="end">${max}</text><text x="${BARS.left - 4}" y="${baseY}" text-anchor="end">0</text>
<text x="${BARS.left}" y="${BARS.height - 4}">${windowH} h ago</text><text x="${BARS.width - BARS.right}" y="${BARS.height - 4}" text-anchor="end">now</text>
${bars.join('\n')}
</svg>`;
}
