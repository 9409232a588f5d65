/**
 * `GET /status`: the status answer as one self-contained HTML document. No JavaScript and no
 * external assets (one inline style block, allowed by its hash in the CSP); landmarks, a
 * heading outline, captioned tables with header cells, states written as words (never colour
 * alone) and `<time datetime>` for every instant, so it reads the same in a screen reader, a
 * text browser or with styles off.
 */
import { createHash } from 'node:crypto';
import type { StatusAnswer } from '../../protocol/public';

const STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--muted:#4a5360;--line:#d0d7de;--ok:#0a6b2d;--warn:#8a4b00;--bad:#a40e26}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#b1bac4;--line:#30363d;--ok:#56d364;--warn:#e3b341;--bad:#ff7b72}}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:60rem;padding:1rem 1.25rem 3rem}
h1{font-size:1.75rem;margin:.5rem 0}h2{font-size:1.25rem;margin:2rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.25rem}
.banner{border:2px solid var(--line);border-radius:.5rem;padding:.75rem 1rem;font-weight:600}
.state-operational{border-color:var(--ok)}.state-degraded{border-color:var(--warn)}.state-maintenance{border-color:var(--bad)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1.5rem;margin:0}dt{color:var(--muted)}dd{margin:0}
table{border-collapse:collapse;width:100%}caption{text-align:left;color:var(--muted);padding:.25rem 0}
th,td{border-bottom:1px solid var(--line);padding:.35rem .5rem;text-align:left;vertical-align:top}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.95em}
a{color:inherit}footer{margin-top:2rem;color:var(--muted);font-size:.9rem}
`;

/** The page's Content-Security-Policy: nothing loads; only the inline style above applies. */
export const STATUS_PAGE_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

export const HTML_CONTENT_TYPE = 'text/html; charset=utf-8';

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const time = (iso: string | null): string => (iso === null ? 'never' : `<time datetime="${escapeHtml(iso)}">${escapeHtml(iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC').replace(/Z$/, ' UTC'))}</time>`);
const yesNo = (v: boolean): string => (v ? 'yes' : 'no');
/** Micro-units as a decimal with 6 places. */
export const money = (micro: number): string => `${micro < 0 ? '-' : ''}${Math.floor(Math.abs(micro) / 1e6)}.${String(Math.abs(micro) % 1e6).padStart(6, '0')}`;
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
      : `<table><caption>Gateways and the state version each has applied (control is at version ${b.state_version})</caption>
<thead><tr><th scope="col">Gateway</th><th scope="col">Connected</th><th scope="col">Snapshot version</th><th scope="col">Versions behind</th><th scope="col">Last seen</th></tr></thead>
<tbody>${b.gateways.list
          .map((g) => `<tr><td><code>${escapeHtml(g.id)}</code></td><td>${yesNo(g.connected)}</td><td>${g.snapshot_version}</td><td>${g.versions_behind}</td><td>${time(g.last_seen)} (${g.seen_ago_s} s ago)</td></tr>`)
          .join('\n')}</tbody></table>`;
  return `<section aria-labelledby="h-bootstrap"><h2 id="h-bootstrap">Bootstrap</h2><dl id="bootstrap">
${row('Database', b.database.ready ? `ready (schema version ${b.database.schema_version})` : `not ready (schema version ${b.database.schema_version} of ${b.database.schema_expected})`)}
${row('Coverage pool', b.pool.funded ? `funded (${money(b.pool.balance)})` : 'not funded')}
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
  return `<section aria-labelledby="h-settler"><h2 id="h-settler">Settler</h2><dl id="settler">
${row('State', escapeHtml(SETTLER_WORDS[st.state]))}
${row('Cadence', st.cadence_ms === null ? 'not scheduled' : `every ${st.cadence_ms / 1000} s, up to ${st.batch_cap} calls per batch`)}
${row('Backlog', `${st.backlog} calls waiting to be settled${st.lag_ms === null ? '' : ` (oldest ${Math.round(st.lag_ms / 1000)} s old)`}`)}
${row('Last run', time(st.last_run_at))}
${row('Last batch', last)}
</dl></section>`;
}

function changelogSection(s: StatusAnswer): string {
  const items =
    s.changelog.length === 0
      ? '<p>No entries yet.</p>'
      : `<ol reversed>${s.changelog.map((e) => `<li>${time(e.at)}: ${escapeHtml(e.text)}</li>`).join('\n')}</ol>`;
  return `<section aria-labelledby="h-changelog"><h2 id="h-changelog">Latest changes</h2>${items}<p><a href="/api/v1/changelog">Full changelog (JSON)</a></p></section>`;
}

/** The whole document. */
export function renderStatusPage(s: StatusAnswer): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc status: ${escapeHtml(HEADLINE[s.status])}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>svc status</h1>
<p class="banner state-${s.status}" id="overall">Overall: ${escapeHtml(HEADLINE[s.status])}</p>
</header>
<main>
${maintenanceSection(s)}
${bootstrapSection(s)}
${settlerSection(s)}
<section aria-labelledby="h-gate"><h2 id="h-gate">Private beta</h2>
<p id="beta-gate">The beta gate is <strong>${s.beta_gate.enabled ? 'on' : 'off'}</strong>${s.beta_gate.since ? ` (since ${time(s.beta_gate.since)})` : ''}: ${
    s.beta_gate.enabled ? 'every gateway call needs a beta API key.' : 'gateway calls do not need a key yet.'
  } <a href="/apply">Apply for access</a>.</p>
</section>
${changelogSection(s)}
</main>
<footer><p>Updated ${time(s.updated_at)}. Machine-readable: <a href="/api/v1/status">/api/v1/status</a>. Service API version ${escapeHtml(s.version)}.</p></footer>
</body>
</html>
`;
}
