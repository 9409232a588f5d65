/**
 * `GET {api_url}/providers` and `GET {api_url}/providers/<id>`: the providers as a table
 * people can choose from (tier with its rule, failure rate, calls, p50/p99 latency and a
 * sparkline of the failure rate per hour), sortable through links; and one provider's page
 * with the same figures, its calls per hour by outcome, and its last refunds. Opaque ids and
 * the operator's display name only: never an endpoint id or an upstream URL.
 */
import type { ProvidersAnswer, Tier } from '../../../protocol/public';
import type { ActivityItem } from '../../../protocol/indexer';
import { hourLabel, type Board, type BoardProvider, type Sort, type SortKey } from './board';
import { escapeHtml, money, ms, percent, plural, renderDocument, time } from '../../pages/layout';
import type { PageUrls } from '../../pages/respond';
import type { ProviderHistory } from './history';
import { CHART_OUTCOMES, OUTCOME_LABELS, dailyBars, hourlyBars, slotTotals, sparkCell } from './svg';

/** What a tier means, in words, for the legend and the provider page. */
export function tierRule(tier: Tier, a: Pick<ProvidersAnswer, 'thresholds' | 'min_calls' | 'window_h'>): string {
  const { reliable_below: low, elevated_up_to: high } = a.thresholds;
  switch (tier) {
    case 'RELIABLE':
      return `failure rate below ${percent(low)}`;
    case 'ELEVATED':
      return `failure rate from ${percent(low)} to ${percent(high)}`;
    case 'HIGH_RISK':
      return `failure rate above ${percent(high)}`;
    case 'UNRATED':
      return `fewer than ${a.min_calls} calls in the last ${a.window_h} h: too few to rate`;
  }
}

export const tierBadge = (tier: Tier): string => `<span class="tier tier-${tier}">${tier}</span>`;

function legend(a: ProvidersAnswer): string {
  const tiers: Tier[] = ['RELIABLE', 'ELEVATED', 'HIGH_RISK', 'UNRATED'];
  return `<ul class="legend" id="tier-legend" aria-label="Tiers">${tiers.map((t) => `<li>${tierBadge(t)} <span>${escapeHtml(tierRule(t, a))}</span></li>`).join('')}</ul>`;
}

const providerName = (p: BoardProvider): string =>
  p.display_name === null
    ? `<code>${escapeHtml(p.id)}</code>`
    : `${escapeHtml(p.display_name)} <code class="muted">${escapeHtml(p.id)}</code>`;

const spark = (p: BoardProvider, a: ProvidersAnswer): string =>
  sparkCell(p.hourlyRates, { floor: 2 * a.thresholds.elevated_up_to, limit: a.thresholds.elevated_up_to, windowH: a.window_h });

const rateText = (p: BoardProvider): string => (p.calls === 0 ? '–' : percent(p.failure_rate));

/** `?sort=…&order=…` */
const sortHref = (key: SortKey, order: Sort['order']): string => `/providers?sort=${key}&amp;order=${order}`;

function sortHeader(label: string, key: SortKey, sort: Sort, num: boolean): string {
  const active = sort.key === key;
  const next = active && sort.order === 'asc' ? 'desc' : 'asc';
  const state = active ? ` aria-sort="${sort.order === 'asc' ? 'ascending' : 'descending'}"` : '';
  const arrow = active ? (sort.order === 'asc' ? ' ▲' : ' ▼') : '';
  return `<th scope="col"${num ? ' class="num"' : ''}${state}><a href="${sortHref(key, next)}" data-sort="${key}">${label}${arrow}</a></th>`;
}

function sortLinks(sort: Sort): string {
  const options: [SortKey, Sort['order'], string][] = [
    ['tier', 'asc', 'tier, best first'],
    ['tier', 'desc', 'tier, worst first'],
    ['failure_rate', 'asc', 'failure rate, lowest first'],
    ['failure_rate', 'desc', 'failure rate, highest first'],
  ];
  return `<p class="sort" id="sort-links">Sort by: ${options
    .map(([key, order, text]) => {
      const current = sort.key === key && sort.order === order;
      return `<a href="${sortHref(key, order)}"${current ? ' aria-current="true"' : ''}>${text}</a>`;
    })
    .join(' · ')}. Unrated providers come last.</p>`;
}

/** The providers table, in the order given. */
export function renderProvidersPage(board: Board, sorted: readonly BoardProvider[], sort: Sort, urls: PageUrls): string {
  const a = board.answer;
  const rows = sorted
    .map(
      (p) => `<tr data-provider="${escapeHtml(p.id)}" data-tier="${p.tier}">
<th scope="row" data-label="Provider"><a href="/providers/${encodeURIComponent(p.id)}">${providerName(p)}</a></th>
<td data-label="Tier">${tierBadge(p.tier)}</td>
<td class="num" data-label="Failure rate">${rateText(p)}</td>
<td class="num" data-label="Calls">${p.calls}</td>
<td class="num" data-label="p50">${ms(p.latency_ms?.p50)}</td>
<td class="num" data-label="p99">${ms(p.latency_ms?.p99)}</td>
<td data-label="Last ${a.window_h} h">${spark(p, a)}</td>
</tr>`,
    )
    .join('\n');
  const table =
    sorted.length === 0
      ? '<p>No provider is registered yet.</p>'
      : `<table class="cards" id="providers">
<caption>${plural(sorted.length, 'provider')}, over the last ${a.window_h} h</caption>
<thead><tr><th scope="col">Provider</th>${sortHeader('Tier', 'tier', sort, false)}${sortHeader('Failure rate', 'failure_rate', sort, true)}<th scope="col" class="num">Calls</th><th scope="col" class="num">p50</th><th scope="col" class="num">p99</th><th scope="col">Failure rate per hour</th></tr></thead>
<tbody>
${rows}
</tbody></table>`;
  const main = `<h1>Providers</h1>
<p class="lede">Every API svc wraps, rated by its failure rate over the last ${a.window_h} h: latency breaches, server errors, network errors and schema mismatches, divided by calls. Upstream 4xx answers and calls the caller broke are the caller's and count neither way. Failed calls are refunded from the coverage pool.</p>
${legend(a)}
${sortLinks(sort)}
${table}`;
  return renderDocument({
    title: 'Providers — svc',
    current: 'providers',
    urls,
    main,
    footer: `<p>Updated ${time(a.updated_at)}. Machine-readable: <a href="/api/v1/providers">/api/v1/providers</a>. Feeds: <a href="${escapeHtml(urls.indexer)}/changelog.atom">changelog</a>, <a href="${escapeHtml(urls.indexer)}/status.atom">maintenance</a>.</p>`,
  });
}

function refundsTable(refunds: readonly ActivityItem[], urls: PageUrls): string {
  if (refunds.length === 0) return '<p id="refunds-none">No refunds for this provider yet.</p>';
  const rows = refunds
    .map(
      (r) => `<tr>
<td data-label="Call"><code>${escapeHtml(r.call_id)}</code></td>
<td data-label="Started">${time(r.at)}</td>
<td data-label="Outcome">${escapeHtml(r.outcome.replace(/_/g, ' '))} (${r.status})</td>
<td class="num" data-label="Refund">${money(r.refund ?? 0)}${r.clamp ? ` <span class="muted">(${escapeHtml(r.clamp.replace(/_/g, ' '))})</span>` : ''}</td>
<td data-label="Receipt">${r.batch === null ? 'pending' : `<a href="${escapeHtml(urls.indexer)}/api/receipts/${r.batch}">batch ${r.batch}</a>`}</td>
</tr>`,
    )
    .join('\n');
  return `<table class="cards" id="refunds"><caption>The last ${plural(refunds.length, 'refunded call')}, newest first; amounts in units</caption>
<thead><tr><th scope="col">Call</th><th scope="col">Started</th><th scope="col">Outcome</th><th scope="col" class="num">Refund</th><th scope="col">Receipt</th></tr></thead>
<tbody>
${rows}
</tbody></table>`;
}

function hourlyTable(board: Board, p: BoardProvider): string {
  const rows = p.hours
    .map((h, i) => {
      if (h === null) return '';
      const { calls, failures } = slotTotals(h);
      return `<tr><th scope="row">${escapeHtml(hourLabel(board.start, i))}</th><td class="num" data-label="Calls">${calls}</td>${CHART_OUTCOMES.map((o) => `<td class="num" data-label="${OUTCOME_LABELS[o]}">${h[o]}</td>`).join('')}<td class="num" data-label="Failure rate">${percent(failures / calls)}</td></tr>`;
    })
    .filter(Boolean)
    .join('\n');
  if (rows === '') return '';
  return `<details><summary>The same numbers as a table</summary><table class="cards" id="hourly"><thead><tr><th scope="col">Hour</th><th scope="col" class="num">Calls</th>${CHART_OUTCOMES.map((o) => `<th scope="col" class="num">${OUTCOME_LABELS[o]}</th>`).join('')}<th scope="col" class="num">Failure rate</th></tr></thead>
<tbody>
${rows}
</tbody></table></details>`;
}

/** `99.5 %` uptime, or a dash for a period without calls. */
export const uptimeText = (value: number | null): string => (value === null ? '–' : percent(value));

/** The days legend: what each colour of the daily bars means. */
export function daysLegend(a: Pick<ProvidersAnswer, 'thresholds' | 'min_calls' | 'window_h'>): string {
  const tiers: Tier[] = ['RELIABLE', 'ELEVATED', 'HIGH_RISK'];
  const items = tiers.map((t) => `<li>${tierBadge(t)} <span>${escapeHtml(tierRule(t, a))}</span></li>`);
  items.push(
    `<li>${tierBadge('UNRATED')} <span>fewer than ${a.min_calls} calls that day</span></li>`,
    '<li><span>a gap: no calls that day</span></li>',
  );
  return `<ul class="legend" aria-label="Day colours">${items.join('')}</ul>`;
}

/** A provider's last 90 UTC days: uptime over 30 and 90 days, the bars, and the rated days as a table. */
export function historySection(h: ProviderHistory, a: Pick<ProvidersAnswer, 'thresholds' | 'min_calls' | 'window_h'>): string {
  const rows = h.days
    .filter((d) => d.tier !== null)
    .reverse()
    .map(
      (d) =>
        `<tr><th scope="row">${new Date(d.start).toISOString().slice(0, 10)}</th><td class="num" data-label="Calls">${d.calls}</td><td class="num" data-label="Failed">${d.failures}</td><td class="num" data-label="Failure rate">${percent(d.rate!)}</td><td data-label="Tier">${tierBadge(d.tier!)}</td></tr>`,
    )
    .join('\n');
  const table =
    rows === ''
      ? ''
      : `<details><summary>The days with calls as a table</summary><table class="cards" id="daily"><thead><tr><th scope="col">Day (UTC)</th><th scope="col" class="num">Calls</th><th scope="col" class="num">Failed</th><th scope="col" class="num">Failure rate</th><th scope="col">Tier</th></tr></thead>
<tbody>
${rows}
</tbody></table></details>`;
  return `<section aria-labelledby="h-history"><h2 id="h-history">Last ${h.days.length} days</h2>
<p id="uptime">Uptime <strong class="uptime">${uptimeText(h.uptime30)}</strong> over 30 days, <strong class="uptime">${uptimeText(h.uptime90)}</strong> over ${h.days.length} days <span class="muted">(1 − the failure rate over the period’s calls; days are UTC, today so far)</span></p>
${dailyBars(h.days, 'days')}
${daysLegend(a)}
${table}
</section>`;
}

/** One provider: the figures, its last 90 days, the hourly chart, the last refunds. */
export function renderProviderPage(
  board: Board,
  p: BoardProvider,
  history: ProviderHistory,
  refunds: readonly ActivityItem[],
  urls: PageUrls,
): string {
  const a = board.answer;
  const name = p.display_name ?? p.id;
  const legendItems = CHART_OUTCOMES.map((o) => `<li><span class="swatch sw-${o}"></span> ${OUTCOME_LABELS[o]}</li>`).join('');
  const main = `<p><a href="/providers">← All providers</a></p>
<h1>${escapeHtml(name)}</h1>
${p.display_name === null ? '' : `<p class="lede">Provider <code>${escapeHtml(p.id)}</code></p>`}
<dl id="figures">
<dt>Tier</dt><dd>${tierBadge(p.tier)} ${escapeHtml(tierRule(p.tier, a))}</dd>
<dt>Failure rate</dt><dd>${rateText(p)} (${p.failures} of ${p.calls} calls in the last ${a.window_h} h)</dd>
<dt>Calls</dt><dd id="calls-line">${plural(p.calls, 'rated call')}; not counted: ${plural(p.client_errors, 'upstream 4xx answer')} and ${plural(p.caller_errors, 'call')} broken by the caller</dd>
<dt>Latency</dt><dd>p50 ${ms(p.latency_ms?.p50)}, p95 ${ms(p.latency_ms?.p95)}, p99 ${ms(p.latency_ms?.p99)}</dd>
<dt>Failure rate per hour</dt><dd>${spark(p, a)}</dd>
</dl>
${historySection(history, a)}
<section aria-labelledby="h-hourly"><h2 id="h-hourly">Calls per hour</h2>
${hourlyBars(
  p.hours,
  p.hours.map((_, i) => hourLabel(board.start, i)),
  a.window_h,
)}
<ul class="legend" aria-label="Outcomes">${legendItems}</ul>
${hourlyTable(board, p)}
</section>
<section aria-labelledby="h-refunds"><h2 id="h-refunds">Last refunds</h2>
${refundsTable(refunds, urls)}
<p class="muted">Each batch's receipt is signed; an agent checks its own call with <code>GET ${escapeHtml(urls.indexer)}/api/calls/&lt;X-Svc-Call-Id&gt;/proof</code>.</p>
</section>`;
  return renderDocument({
    title: `${name} — svc providers`,
    current: 'providers',
    urls,
    main,
    footer: `<p>Updated ${time(a.updated_at)}.</p>`,
  });
}
