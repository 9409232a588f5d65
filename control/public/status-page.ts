/**
 * `GET /status`: the status answer as one HTML document in the public pages' layout
 * (`../pages/layout.ts`: the site header, light and dark schemes, the nonce CSP of `../pages/respond.ts`).
 * No JavaScript and no external assets; landmarks, a heading outline, captioned tables with
 * header cells, states written as words (never colour alone) and `<time datetime>` for every
 * instant, so it reads the same in a screen reader, a text browser or with styles off. Links to
 * the providers, the activity and the Atom feeds.
 */
import { poolChart, poolWords } from '../pages/pool-chart';
import type { StatusAnswer } from '../../protocol/public';
import { HISTORY_DAYS, type History, type Incident } from './pages/history';
import { duration, escapeHtml, money, renderDocument, time } from '../pages/layout';
import { daysLegend, uptimeText } from './pages/providers-page';
import type { PageUrls } from '../pages/respond';
import { dailyBars } from './pages/svg';

const yesNo = (v: boolean): string => (v ? 'yes' : 'no');
const row = (term: string, value: string): string => `<dt>${escapeHtml(term)}</dt><dd>${value}</dd>`;

const HEADLINE: Record<StatusAnswer['status'], string> = {
  operational: 'Operational',
  degraded: 'Degraded: no gateway is connected to control',
  maintenance: 'Under maintenance',
};

const SETTLER_WORDS: Record<StatusAnswer['settler']['state'], string> = {
  running: 'running (settling a batch now)',
  idle: 'idle (waiting for its next run)',
  paused: 'paused by an operator',
  halted:
    'halted: a settled batch has no receipt, or the receipt chain does not verify, so nothing is settled until the operators restore or re-sign it',
  not_running: 'not running',
};

function maintenanceSection(s: StatusAnswer): string {
  const m = s.maintenance;
  const body = m.enabled
    ? `<p><strong>Maintenance mode is on</strong> since ${time(m.since)}. Gateway calls answer 503 until it ends.</p>` +
      (m.note ? `<p>Note from the operators: <q id="maintenance-note">${escapeHtml(m.note)}</q></p>` : '')
    : '<p>Maintenance mode is off.</p>';
  return `<section aria-labelledby="h-maintenance"><h2 id="h-maintenance">Maintenance</h2>${body}</section>`;
}

function bootstrapSection(s: StatusAnswer): string {
  const b = s.bootstrap;
  const gateways =
    b.gateways.list.length === 0
      ? '<p>No gateway has connected yet.</p>'
      : `<table class="cards"><caption>Gateways and the state version each has applied (control is at version ${b.state_version})</caption>
<thead><tr><th scope="col">Gateway</th><th scope="col">Connected</th><th scope="col">Snapshot version</th><th scope="col">Versions behind</th><th scope="col">Last seen</th></tr></thead>
<tbody>${b.gateways.list
          .map(
            (g) =>
              `<tr><td data-label="Gateway"><code>${escapeHtml(g.id)}</code></td><td data-label="Connected">${yesNo(g.connected)}</td><td data-label="Snapshot version">${g.snapshot_version}</td><td data-label="Versions behind">${g.versions_behind}</td><td data-label="Last seen">${time(g.last_seen)} (${g.seen_ago_s} s ago)</td></tr>`,
          )
          .join('\n')}</tbody></table>`;
  return `<section aria-labelledby="h-bootstrap"><h3 id="h-bootstrap">Bootstrap</h3><dl id="bootstrap">
${row('Database', b.database.ready ? `ready (schema version ${b.database.schema_version})` : `not ready (schema version ${b.database.schema_version} of ${b.database.schema_expected})`)}
${row('Coverage pool', b.pool.funded ? `funded (${money(b.pool.balance)})` : 'not funded')}
${row('Pool capital', poolWords(b.pool.capital))}
${row('Endpoints registered', String(b.endpoints.registered))}
${row('Gateways connected', `${b.gateways.connected} of ${b.gateways.known} known`)}
${row('State version', String(b.state_version))}
</dl>${gateways}</section>`;
}

function settlerSection(s: StatusAnswer): string {
  const st = s.settler;
  const last = st.last_batch
    ? `batch ${st.last_batch.id} for <code>${escapeHtml(st.last_batch.provider)}</code> at ${time(st.last_batch.at)}: ${st.last_batch.calls} calls, refunds ${money(st.last_batch.refunds)}, premiums ${money(st.last_batch.premiums)}`
    : 'none yet';
  return `<section aria-labelledby="h-settler"><h3 id="h-settler">Settler</h3><dl id="settler">
${row('State', escapeHtml(SETTLER_WORDS[st.state]))}
${row('Cadence', st.cadence_ms === null ? 'not scheduled' : `every ${st.cadence_ms / 1000} s, up to ${st.batch_cap} calls per batch`)}
${row('Backlog', `${st.backlog} calls waiting to be settled${st.lag_ms === null ? '' : ` (oldest ${Math.round(st.lag_ms / 1000)} s old)`}`)}
${row('Last run', time(st.last_run_at))}
${row('Last batch', last)}
</dl></section>`;
}

function changelogSection(s: StatusAnswer, urls: PageUrls): string {
  const items =
    s.changelog.length === 0
      ? '<p>No entries yet.</p>'
      : `<ol reversed>${s.changelog.map((e) => `<li>${time(e.at)}: ${escapeHtml(e.text)}</li>`).join('\n')}</ol>`;
  return `<section aria-labelledby="h-changelog"><h2 id="h-changelog">Latest changes</h2>${items}<p><a href="/api/v1/changelog">Full changelog (JSON)</a> · feeds: <a href="${escapeHtml(urls.indexer)}/changelog.atom" id="feed-changelog">changelog (Atom)</a>, <a href="${escapeHtml(urls.indexer)}/status.atom" id="feed-status">maintenance periods and HIGH_RISK days (Atom)</a></p></section>`;
}

/** Each provider's last 90 days: uptime over 30 and 90 days and the daily bars, linking to its page. */
function providersSection(h: History): string {
  const items =
    h.providers.length === 0
      ? '<p>No provider is registered yet.</p>'
      : `<ul class="history" id="provider-history">${h.providers
          .map(
            (p) => `<li data-provider="${escapeHtml(p.id)}"><h3><a href="/providers/${encodeURIComponent(p.id)}">${
              p.display_name === null ? `<code>${escapeHtml(p.id)}</code>` : escapeHtml(p.display_name)
            }</a> <span class="muted">uptime <span class="uptime">${uptimeText(p.uptime30)}</span> (30 days), <span class="uptime">${uptimeText(p.uptime90)}</span> (${p.days.length} days)</span></h3>
${dailyBars(p.days, `days-${p.id}`)}</li>`,
          )
          .join('\n')}</ul>${daysLegend(h.rules)}`;
  return `<section aria-labelledby="h-providers"><h2 id="h-providers">Providers over the last ${HISTORY_DAYS} days</h2>
<p class="lede">One bar per UTC day, coloured by the tier that day’s failure rate falls in. Uptime is 1 − the failure rate over the period’s calls.</p>
${items}</section>`;
}

function incidentTitle(i: Incident): string {
  if (i.kind === 'maintenance') return 'Maintenance';
  const p = i.provider!;
  return `<span class="tier tier-HIGH_RISK">HIGH_RISK</span> <a href="/providers/${encodeURIComponent(p.id)}">${
    p.display_name === null ? `<code>${escapeHtml(p.id)}</code>` : escapeHtml(p.display_name)
  }</a>`;
}

/** Every maintenance period and every day a provider was HIGH_RISK, newest first. */
function incidentsSection(h: History): string {
  const items =
    h.incidents.length === 0
      ? `<p id="incidents-none">No maintenance and no HIGH_RISK day in the last ${HISTORY_DAYS} days.</p>`
      : `<ol class="history" id="incidents">${h.incidents
          .map(
            (i) => `<li data-incident="${escapeHtml(i.kind)}"><h3>${incidentTitle(i)}</h3>
<p>${time(i.start)} to ${i.end === null ? 'now (ongoing)' : time(i.end)}: ${escapeHtml(duration(i.duration_ms))}${i.end === null ? ' so far' : ''}</p>
${i.note === null ? '' : i.kind === 'maintenance' ? `<p>Note from the operators: <q>${escapeHtml(i.note)}</q></p>` : `<p>${escapeHtml(i.note)}</p>`}</li>`,
          )
          .join('\n')}</ol>`;
  return `<section aria-labelledby="h-incidents"><h2 id="h-incidents">Incident history</h2>${items}</section>`;
}

/**
 * The note on a status page served stale while the database cannot be reached: the answer is
 * the last one read, as of its `updated_at`, and the error code programs would get.
 */
function staleNote(s: StatusAnswer): string {
  return `<p class="banner state-maintenance" id="stale" role="alert">Stale since ${time(s.updated_at)}: the data is temporarily unavailable (the database cannot be reached, error code <code id="error-code">svc_store_unavailable</code>). This is the last status read; it is read again as soon as the database is back.</p>`;
}

/**
 * The whole document (with the nonce placeholder `../pages/respond.ts` fills in, unless
 * `nonce` is given). `stale`: the last answer, shown while the database cannot be reached.
 */
export function renderStatusPage(
  s: StatusAnswer,
  history: History,
  urls: PageUrls,
  options: { stale?: boolean; nonce?: string } = {},
): string {
  const main = `<h1>svc status</h1>
${options.stale === true ? `${staleNote(s)}\n` : ''}<p class="banner state-${s.status}" id="overall">Overall: ${escapeHtml(HEADLINE[s.status])}</p>
<p id="see-also">See also: <a href="/providers">providers and their reliability</a> · <a href="${escapeHtml(urls.indexer)}/activity">settled activity and refunds</a> · <a href="${escapeHtml(urls.indexer)}/changelog.atom">changelog feed</a> · <a href="${escapeHtml(urls.indexer)}/status.atom">incidents feed</a></p>
${providersSection(history)}
${incidentsSection(history)}
${maintenanceSection(s)}
<section aria-labelledby="h-gate"><h2 id="h-gate">Private beta</h2>
<p id="beta-gate">The beta gate is <strong>${s.beta_gate.enabled ? 'on' : 'off'}</strong>${s.beta_gate.since ? ` (since ${time(s.beta_gate.since)})` : ''}: ${
    s.beta_gate.enabled ? 'every gateway call needs a beta API key.' : 'gateway calls do not need a key yet.'
  } <a href="/apply">Apply for access</a>.</p>
</section>
${changelogSection(s, urls)}
<details id="details"><summary>Details</summary>
${bootstrapSection(s)}
${settlerSection(s)}
</details>
<section aria-labelledby="h-pool"><h2 id="h-pool">Coverage pool</h2>
<p id="pool-capital">${poolWords(s.bootstrap.pool.capital)}.</p>
${poolChart(history.poolDays, history.now)}
</section>`;
  return renderDocument(
    {
      title: `svc status: ${HEADLINE[s.status]}`,
      current: 'status',
      urls,
      main,
      footer: `<p>Updated ${time(s.updated_at)}. Machine-readable: <a href="/api/v1/status">/api/v1/status</a>. Service API version ${escapeHtml(s.version)}.</p>`,
    },
    options.nonce,
  );
}
