/**
 * `GET {indexer_url}/activity`: the money side of svc as a page. Totals from the ledger, the
 * latest settlement batches, the latest refunds, and every call newest first, paged with the
 * indexer's own sealed cursor (`?before=`, the `next_before` of `/api/activity`).
 *
 * Each settled call links to its batch's signed receipt (`/api/receipts/<batch>`). Calls are
 * shown by their opaque ids only: the gateway's call id, which `/api/calls/<id>/proof` takes,
 * is the caller's own handle (the `X-Svc-Call-Id` it was answered with) and is never listed,
 * so the page cannot be used to walk every caller's proof; the page says how a caller checks
 * its own call.
 */
import type { ActivityItem, ActivityPage } from '../../../protocol/indexer';
import type { SettlerPublicState } from '../../../protocol/public';
import { escapeHtml, money, plural, renderDocument, time } from './layout';
import type { PageUrls } from './respond';

export interface ActivityTotals {
  pool_size: number;
  settled_batches: number;
  settled_calls: number;
  total_refunds: number;
  total_premiums: number;
  unsettled_calls: number;
  settler: SettlerPublicState;
}

/** A settlement batch with its provider's opaque id. */
export interface PublicBatch {
  id: number;
  provider: string;
  at: string;
  calls: number;
  refunds: number;
  premiums: number;
  clamped_calls: number;
}

export interface ActivityView {
  totals: ActivityTotals;
  /** Display names by opaque provider id (providers without one are shown by id). */
  names: ReadonlyMap<string, string>;
  batches: readonly PublicBatch[];
  refunds: readonly ActivityItem[];
  page: ActivityPage;
  /** True when this is a later page (`?before=` given). */
  older: boolean;
}

const SETTLER_WORDS: Record<SettlerPublicState, string> = {
  running: 'running',
  idle: 'idle between runs',
  paused: 'paused by an operator',
  halted: 'halted: a settled batch has no receipt',
  not_running: 'not running',
};

const words = (s: string): string => escapeHtml(s.replace(/_/g, ' '));
function providerLink(urls: PageUrls, names: ActivityView['names'], id: string): string {
  const name = names.get(id);
  return `<a href="${escapeHtml(urls.api)}/providers/${encodeURIComponent(id)}">${name === undefined ? `<code>${escapeHtml(id)}</code>` : escapeHtml(name)}</a>`;
}
const receiptLink = (batch: number): string => `<a href="/api/receipts/${batch}" data-receipt="${batch}">batch ${batch}</a>`;

function totals(t: ActivityTotals): string {
  return `<dl id="totals">
<dt>Coverage pool</dt><dd>${money(t.pool_size)}</dd>
<dt>Settled</dt><dd>${t.settled_calls} calls in ${t.settled_batches} batches</dd>
<dt>Refunds paid</dt><dd>${money(t.total_refunds)}</dd>
<dt>Premiums collected</dt><dd>${money(t.total_premiums)}</dd>
<dt>Waiting to settle</dt><dd>${t.unsettled_calls} calls (the settler is ${escapeHtml(SETTLER_WORDS[t.settler])})</dd>
</dl>`;
}

function batchesTable(batches: readonly PublicBatch[], names: ActivityView['names'], urls: PageUrls): string {
  if (batches.length === 0) return '<p id="batches-none">Nothing has been settled yet.</p>';
  const rows = batches
    .map(
      (b) => `<tr data-batch="${b.id}">
<th scope="row" data-label="Batch">${receiptLink(b.id)}</th>
<td data-label="Provider">${providerLink(urls, names, b.provider)}</td>
<td data-label="Settled">${time(b.at)}</td>
<td class="num" data-label="Calls">${b.calls}</td>
<td class="num" data-label="Refunds">${money(b.refunds)}${b.clamped_calls > 0 ? ` <span class="muted">(${b.clamped_calls} clamped)</span>` : ''}</td>
<td class="num" data-label="Premiums">${money(b.premiums)}</td>
</tr>`,
    )
    .join('\n');
  return `<table class="cards" id="batches"><caption>The last ${plural(batches.length, 'settlement batch', 'settlement batches')}, newest first; each links to its signed receipt</caption>
<thead><tr><th scope="col">Batch</th><th scope="col">Provider</th><th scope="col">Settled</th><th scope="col" class="num">Calls</th><th scope="col" class="num">Refunds</th><th scope="col" class="num">Premiums</th></tr></thead>
<tbody>
${rows}
</tbody></table>
<p><a href="/api/receipts">Every receipt (JSON)</a> · <a href="/api/receipts/keys">the keys that sign them</a></p>`;
}

function settlement(c: ActivityItem): string {
  return c.batch === null ? '<span class="muted">not settled yet</span>' : receiptLink(c.batch);
}

function callsTable(id: string, caption: string, calls: readonly ActivityItem[], names: ActivityView['names'], urls: PageUrls): string {
  const rows = calls
    .map(
      (c) => `<tr data-call="${escapeHtml(c.call_id)}"${c.batch === null ? '' : ` data-batch="${c.batch}"`}>
<th scope="row" data-label="Call"><code>${escapeHtml(c.call_id)}</code></th>
<td data-label="Provider">${providerLink(urls, names, c.provider)}</td>
<td data-label="Started">${time(c.at)}</td>
<td data-label="Outcome">${words(c.outcome)} (${c.status}, ${c.latency_ms} ms)</td>
<td class="num" data-label="Premium">${c.premium === null ? '–' : money(c.premium)}</td>
<td class="num" data-label="Refund">${c.refund === null ? '–' : money(c.refund)}${c.clamp ? ` <span class="muted">(${words(c.clamp)})</span>` : ''}</td>
<td data-label="Receipt">${settlement(c)}</td>
</tr>`,
    )
    .join('\n');
  return `<table class="cards" id="${id}"><caption>${caption}</caption>
<thead><tr><th scope="col">Call</th><th scope="col">Provider</th><th scope="col">Started</th><th scope="col">Outcome</th><th scope="col" class="num">Premium</th><th scope="col" class="num">Refund</th><th scope="col">Receipt</th></tr></thead>
<tbody>
${rows}
</tbody></table>`;
}

export function renderActivityPage(v: ActivityView, urls: PageUrls): string {
  const page = v.page;
  const pager = [
    v.older ? '<a href="/activity" id="newest">Newest calls</a>' : '',
    page.next_before === null
      ? ''
      : `<a href="/activity?before=${encodeURIComponent(page.next_before)}" id="older" rel="next">Older calls →</a>`,
  ].filter(Boolean);
  const calls =
    page.activity.length === 0
      ? `<p id="calls-none">${v.older ? 'No older calls.' : 'No calls yet.'}</p>`
      : callsTable(
          'calls',
          `${plural(page.activity.length, 'call')}, newest first${v.older ? ' (an older page)' : ''}; amounts in units of 6 decimals`,
          page.activity,
          v.names,
          urls,
        );
  const refunds =
    v.refunds.length === 0
      ? '<p id="refunds-none">No refunds yet.</p>'
      : callsTable('recent-refunds', `The last ${plural(v.refunds.length, 'refunded call')}, newest first`, v.refunds, v.names, urls);
  const main = `<h1>Activity</h1>
<p class="lede">What svc settled: premiums collected on good calls, refunds paid from the coverage pool for failed ones. Calls show opaque ids only; nothing here names a caller.</p>
${totals(v.totals)}
<section aria-labelledby="h-batches"><h2 id="h-batches">Settled batches</h2>
${batchesTable(v.batches, v.names, urls)}
</section>
<section aria-labelledby="h-refunds"><h2 id="h-refunds">Recent refunds</h2>
${refunds}
</section>
<section aria-labelledby="h-calls"><h2 id="h-calls">Calls</h2>
${calls}
${pager.length > 0 ? `<nav class="pager" aria-label="Pages">${pager.join('')}</nav>` : ''}
</section>
<section aria-labelledby="h-check"><h2 id="h-check">Check your own call</h2>
<p>Every settled call is a leaf of its batch's Merkle tree, and each batch's receipt is signed by svc. With the <code>X-Svc-Call-Id</code> your call was answered with, <code>GET ${escapeHtml(urls.indexer)}/api/calls/&lt;X-Svc-Call-Id&gt;/proof</code> returns your call's leaf (outcome, premium, refund), its inclusion proof and the signed receipt, which you can check with <code>node:crypto</code> alone or <code>svc.verifyRefund(callId)</code> in <code>svc-monitor-sdk</code>.</p>
</section>`;
  return renderDocument({
    title: `Activity${v.older ? ' (older calls)' : ''} — svc`,
    current: 'activity',
    urls,
    main,
    footer: `<p>Updated ${time(page.updated_at)}. Machine-readable: <a href="/api/stats">/api/stats</a>, <a href="/api/activity">/api/activity</a>.</p>`,
  });
}
