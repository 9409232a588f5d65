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
import { SvcError } from '../../../protocol/errors';
import type { ActivityItem, ActivityPage } from '../../../protocol/indexer';
import { OUTCOMES, type Outcome } from '../../../protocol/outcome';
import type { SettlerPublicState } from '../../../protocol/public';
import type { ActivityFilter } from '../../store/public-reads';
import { escapeHtml, money, plural, renderDocument, time } from '../../pages/layout';
import type { PageUrls } from '../../pages/respond';
import type { PublicPool } from '../../../protocol/lps';
import { poolChart, poolWords } from '../../pages/pool-chart';
import type { PoolDay } from '../../store/lps';

export interface ActivityTotals {
  pool_size: number;
  pool: PublicPool;
  /** The pool's days for the 90-day chart, and the time it ends at. */
  pool_days: PoolDay[];
  now: number;
  settled_batches: number;
  settled_calls: number;
  total_refunds: number;
  total_premiums: number;
  unsettled_calls: number;
  /** Calls admitted uncovered (the pool paused): they move no money. */
  uncovered_calls: number;
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

/** What the visitor asked `/activity` for: `?provider=&outcome=&call=` (an empty field is no filter). */
export interface ActivityQuery {
  /** Opaque provider id. */
  provider: string | null;
  outcome: Outcome | null;
  /** A gateway call id (`X-Svc-Call-Id`) to look up. */
  call: string | null;
}

/** The longest call id the lookup takes. @default 200 */
export const MAX_CALL_ID = 200;

/**
 * `?provider=&outcome=&call=` against the providers (opaque id → endpoint id): an unknown
 * provider or outcome, or a call id too long to be one, is 400 `svc_bad_request`.
 */
export function parseActivityQuery(
  query: URLSearchParams,
  providers: ReadonlyMap<string, string>,
): { asked: ActivityQuery; filter: ActivityFilter | null } {
  const field = (name: string): string | null => query.get(name)?.trim() || null;
  const asked: ActivityQuery = { provider: field('provider'), outcome: field('outcome') as Outcome | null, call: field('call') };
  const errors: { field: string; message: string }[] = [];
  if (asked.provider !== null && !providers.has(asked.provider)) errors.push({ field: 'provider', message: 'is not a provider of svc' });
  if (asked.outcome !== null && !(OUTCOMES as readonly string[]).includes(asked.outcome))
    errors.push({ field: 'outcome', message: `must be one of ${OUTCOMES.join(', ')}` });
  if (asked.call !== null && asked.call.length > MAX_CALL_ID)
    errors.push({ field: 'call', message: `must be at most ${MAX_CALL_ID} characters` });
  if (errors.length > 0)
    throw new SvcError('svc_bad_request', errors.map((e) => `${e.field} ${e.message}`).join('; '), { extra: { errors } });
  const filter =
    asked.provider === null && asked.outcome === null
      ? null
      : { endpointId: asked.provider === null ? null : providers.get(asked.provider)!, outcome: asked.outcome };
  return { asked, filter };
}

export interface ActivityView {
  totals: ActivityTotals;
  /** Every provider (opaque id), for the filter. */
  providers: readonly string[];
  asked: ActivityQuery;
  /** The looked-up call (null: none recorded), when `asked.call` is set. */
  lookup: ActivityItem | null;
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
  halted: 'halted: a settled batch has no receipt, or the receipt chain does not verify',
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
<dt>Coverage pool</dt><dd>${money(t.pool_size)} units</dd>
<dt>Pool capital</dt><dd>${poolWords(t.pool)}${poolChart(t.pool_days, t.now)}</dd>
<dt>Settled</dt><dd>${t.settled_calls} calls in ${t.settled_batches} batches</dd>
<dt>Refunds paid</dt><dd>${money(t.total_refunds)}</dd>
<dt>Premiums collected</dt><dd>${money(t.total_premiums)}</dd>
<dt>Waiting to settle</dt><dd>${t.unsettled_calls} calls (the settler is ${escapeHtml(SETTLER_WORDS[t.settler])})</dd>
<dt>Admitted uncovered</dt><dd id="uncovered-calls">${t.uncovered_calls} calls (no premium, no refund: the pool was paused)</dd>
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
  return `<table class="cards oneline" id="batches"><caption>The last ${plural(batches.length, 'settlement batch', 'settlement batches')}, newest first; each links to its signed receipt; amounts in units</caption>
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
<td data-label="Outcome">${words(c.outcome)} <span class="muted">(${c.status}, ${c.latency_ms} ms)</span></td>
<td class="num" data-label="Premium">${c.premium === null ? '–' : money(c.premium)}</td>
<td class="num" data-label="Refund">${c.refund === null ? '–' : money(c.refund)}${c.clamp ? ` <span class="muted">(${words(c.clamp)})</span>` : ''}</td>
<td data-label="Receipt">${settlement(c)}</td>
</tr>`,
    )
    .join('\n');
  return `<table class="cards oneline" id="${id}"><caption>${caption}</caption>
<thead><tr><th scope="col">Call</th><th scope="col">Provider</th><th scope="col">Started</th><th scope="col">Outcome</th><th scope="col" class="num">Premium</th><th scope="col" class="num">Refund</th><th scope="col">Receipt</th></tr></thead>
<tbody>
${rows}
</tbody></table>`;
}

/** `/activity?…` with the filter asked for (and `extra`), for the pager's links. */
function activityHref(q: ActivityQuery, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  if (q.provider !== null) params.set('provider', q.provider);
  if (q.outcome !== null) params.set('outcome', q.outcome);
  for (const [k, v] of Object.entries(extra)) params.set(k, v);
  const search = params.toString();
  return escapeHtml(`/activity${search === '' ? '' : `?${search}`}`);
}

const option = (value: string, text: string, current: string | null): string =>
  `<option value="${escapeHtml(value)}"${value === (current ?? '') ? ' selected' : ''}>${text}</option>`;

/** The GET form (no script): filter by provider and outcome, or look up one call by its id. */
function filterForm(v: ActivityView): string {
  const providers = [option('', 'All providers', v.asked.provider)]
    .concat(v.providers.map((id) => option(id, escapeHtml(v.names.get(id) ?? id), v.asked.provider)))
    .join('');
  const outcomes = [option('', 'All outcomes', v.asked.outcome)].concat(OUTCOMES.map((o) => option(o, words(o), v.asked.outcome))).join('');
  return `<form method="get" action="/activity" class="filters" id="filter" role="search" aria-label="Filter the calls">
<div><label for="f-provider">Provider</label><select id="f-provider" name="provider">${providers}</select></div>
<div><label for="f-outcome">Outcome</label><select id="f-outcome" name="outcome">${outcomes}</select></div>
<div><label for="f-call">Call id <span class="muted">(your <code>X-Svc-Call-Id</code>)</span></label><input type="text" id="f-call" name="call" value="${escapeHtml(v.asked.call ?? '')}" maxlength="${MAX_CALL_ID}" spellcheck="false" autocomplete="off"></div>
<div><button type="submit">Show</button></div>
</form>
<p class="small">An empty field means no filter. ${v.asked.provider !== null || v.asked.outcome !== null || v.asked.call !== null ? '<a href="/activity" id="clear">Clear the filter</a>' : ''}</p>`;
}

/** The call looked up by its id: outcome, refund, batch and a link to its proof. */
function lookupSection(v: ActivityView, urls: PageUrls): string {
  const callId = v.asked.call;
  if (callId === null) return '';
  const c = v.lookup;
  const body =
    c === null
      ? `<p id="lookup-none">No call with id <code>${escapeHtml(callId)}</code> is recorded.</p>`
      : `<dl id="lookup">
<dt>Provider</dt><dd>${providerLink(urls, v.names, c.provider)}</dd>
<dt>Started</dt><dd>${time(c.at)}</dd>
<dt>Outcome</dt><dd>${words(c.outcome)} (${c.status}, ${c.latency_ms} ms)</dd>
<dt>Refund</dt><dd>${c.batch === null ? 'not settled yet' : c.refund === null || c.refund === 0 ? 'none' : `${money(c.refund)} units${c.clamp ? ` (${words(c.clamp)})` : ''}`}</dd>
<dt>Batch</dt><dd>${settlement(c)}</dd>
<dt>Proof</dt><dd>${c.batch === null ? 'once its batch settles' : `<a href="/api/calls/${encodeURIComponent(callId)}/proof" id="proof-link">its leaf, inclusion proof and signed receipt (JSON)</a>`}</dd>
</dl>`;
  return `<section aria-labelledby="h-lookup"><h2 id="h-lookup">Call <code>${escapeHtml(callId)}</code></h2>${body}</section>`;
}

export function renderActivityPage(v: ActivityView, urls: PageUrls): string {
  const page = v.page;
  const filtered = v.asked.provider !== null || v.asked.outcome !== null;
  const pager = [
    v.older ? `<a href="${activityHref(v.asked)}" id="newest">Newest calls</a>` : '',
    page.next_before === null
      ? ''
      : `<a href="${activityHref(v.asked, { before: page.next_before })}" id="older" rel="next">Older calls →</a>`,
  ].filter(Boolean);
  const calls =
    page.activity.length === 0
      ? `<p id="calls-none">${v.older ? 'No older calls' : filtered ? 'No calls match the filter' : 'No calls yet'}.</p>`
      : callsTable(
          'calls',
          `${plural(page.activity.length, 'call')}${filtered ? ' matching the filter' : ''}, newest first${v.older ? ' (an older page)' : ''}; amounts in units`,
          page.activity,
          v.names,
          urls,
        );
  const refunds =
    v.refunds.length === 0
      ? '<p id="refunds-none">No refunds yet.</p>'
      : callsTable(
          'recent-refunds',
          `The last ${plural(v.refunds.length, 'refunded call')}, newest first; amounts in units`,
          v.refunds,
          v.names,
          urls,
        );
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
${filterForm(v)}
${lookupSection(v, urls)}
${calls}
${pager.length > 0 ? `<nav class="pager" aria-label="Pages">${pager.join('')}</nav>` : ''}
</section>
<section aria-labelledby="h-check"><h2 id="h-check">Check your own call</h2>
<p>Every settled call is a leaf of its batch's Merkle tree, and each batch's receipt is signed by svc. With the <code>X-Svc-Call-Id</code> your call was answered with, <code>GET ${escapeHtml(urls.indexer)}/api/calls/&lt;X-Svc-Call-Id&gt;/proof</code> returns your call's leaf (outcome, premium, refund), its inclusion proof and the signed receipt, which you can check with <code>node:crypto</code> alone or <code>svc.verifyRefund(callId)</code> in <code>svc-monitor-sdk</code>.</p>
</section>`;
  return renderDocument({
    title: `Activity${v.older ? ' (older calls)' : ''} — svc`,
    current: 'activity',
    wide: true,
    urls,
    main,
    footer: `<p>Updated ${time(page.updated_at)}. Machine-readable: <a href="/api/stats">/api/stats</a>, <a href="/api/activity">/api/activity</a>.</p>`,
  });
}
