/**
 * What every page of both sites (the public API's and the indexer's) shares: one stylesheet
 * (light and dark from `prefers-color-scheme`, a layout that reads at 390 px), the small site
 * header, the document around a page's content, and the helpers that write values into HTML.
 * No JavaScript anywhere; the one inline `<style>` carries the response's CSP nonce (see
 * `respond.ts`), so nothing else may style or run. Charts are inline SVG styled by class (the
 * CSP refuses `style` attributes).
 */

/** The listeners' URLs, for links between the public API's pages and the indexer's. */
export interface PageUrls {
  api: string;
  indexer: string;
}

/** Stands for the nonce in a cached page (`respond.ts`); as long as a real one (16 bytes in base64), so a page's length never changes. */
export const NONCE_PLACEHOLDER = 'svc-nonce-placeholder-00';

/** The site header's rules. */
const SITE_HEADER_STYLE = `.site{display:flex;flex-wrap:wrap;align-items:baseline;gap:.25rem 1.1rem;padding:.6rem 0;border-bottom:1px solid var(--line,#d0d7de);margin-bottom:1rem}
.site .brand{font-weight:700;font-size:1.15rem;margin-right:.4rem}
.site a{color:inherit;text-decoration:none;padding:.1rem 0}.site a:hover,.site a:focus{text-decoration:underline}
.site a[aria-current=page]{font-weight:700;border-bottom:2px solid currentColor}`;

export const STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--muted:#4a5360;--line:#d0d7de;--panel:#f6f8fa;--ok:#0a6b2d;--warn:#8a4b00;--bad:#a40e26;--none:#57606a;
--limit:#a40e26;--c-ok:#2da44e;--c-latency_breach:#bf8700;--c-server_error:#cf222e;--c-network_error:#8250df;--c-schema_mismatch:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#b1bac4;--line:#30363d;--panel:#161b22;--ok:#56d364;--warn:#e3b341;--bad:#ff7b72;--none:#8b949e;
--limit:#ff938a;--c-ok:#3fb950;--c-latency_breach:#d29922;--c-server_error:#f85149;--c-network_error:#a371f7;--c-schema_mismatch:#58a6ff}}
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:60rem;padding:0 1.25rem 3rem}
body.wide{max-width:78rem}
a{color:inherit}
${SITE_HEADER_STYLE}
h1{font-size:1.75rem;margin:.5rem 0}h2{font-size:1.25rem;margin:2rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.25rem}
.lede{color:var(--muted);margin-top:0}
.banner{border:2px solid var(--line);border-radius:.5rem;padding:.75rem 1rem;font-weight:600}
.state-operational{border-color:var(--ok)}.state-degraded{border-color:var(--warn)}.state-maintenance{border-color:var(--bad)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1.5rem;margin:0}dt{color:var(--muted)}dd{margin:0;min-width:0;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}caption{text-align:left;color:var(--muted);padding:.25rem 0}
th,td{border-bottom:1px solid var(--line);padding:.35rem .5rem;text-align:left;vertical-align:middle}
td{overflow-wrap:anywhere}thead th{white-space:nowrap}
thead th a{text-decoration:none}thead th a:hover,thead th a:focus{text-decoration:underline}
td code,th code{white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em}
.muted{color:var(--muted)}
.tier{display:inline-block;white-space:nowrap;border:1.5px solid currentColor;border-radius:.3rem;padding:0 .35rem;font-size:.85rem;font-weight:700;letter-spacing:.02em}
.tier-RELIABLE{color:var(--ok)}.tier-ELEVATED{color:var(--warn)}.tier-HIGH_RISK{color:var(--bad)}.tier-UNRATED{color:var(--none);border-style:dashed}
.legend{display:flex;flex-wrap:wrap;gap:.35rem 1.25rem;padding:0;margin:.5rem 0;list-style:none;font-size:.9rem}
.legend li{display:flex;align-items:baseline;gap:.4rem}
.sort{font-size:.9rem;margin:.75rem 0}.sort a[aria-current=true]{font-weight:700}
.spark{display:block;width:120px;height:28px;overflow:visible;flex:none}
.spark .base{stroke:var(--line);stroke-width:1}.spark .limit{stroke:var(--limit);stroke-width:1.25;stroke-dasharray:3 2}
.spark .line{fill:none;stroke:var(--fg);stroke-width:1.25;stroke-linejoin:round;stroke-linecap:round}.spark .pt{fill:var(--fg)}
.spark-box{display:inline-flex;align-items:center;gap:.5rem;white-space:nowrap}.spark-now{font-variant-numeric:tabular-nums}
.spark-none{color:var(--muted);font-style:italic}
.pool-chart{display:block;width:100%;max-width:36rem;height:auto;overflow:visible}.pool-chart .base{stroke:var(--line);stroke-width:1}
.pool-chart path{fill:none;stroke-width:1.5;stroke-linejoin:round}.pool-chart .capital{stroke:var(--fg)}.pool-chart .exposure{stroke:var(--limit);stroke-dasharray:4 2}
.key-capital{border-bottom:2px solid var(--fg)}.key-exposure{border-bottom:2px dashed var(--limit)}
.chart-box{margin:.5rem 0;min-width:0}
.chart{display:block;width:100%;height:auto}
.chart .axis,.days .axis{stroke:var(--line);stroke-width:1}
p.axis{display:flex;justify-content:space-between;gap:1rem;margin:.15rem 0;color:var(--muted);font-size:1rem;line-height:1.3}
.days{display:block;width:100%;height:2.25rem}
.day-RELIABLE{fill:var(--ok)}.day-ELEVATED{fill:var(--warn)}.day-HIGH_RISK{fill:var(--bad)}.day-UNRATED{fill:var(--none);opacity:.5}
.uptime{font-variant-numeric:tabular-nums;white-space:nowrap}
.history{list-style:none;padding:0;margin:0}.history>li{border-bottom:1px solid var(--line);padding:.6rem 0}
.history h3{font-size:1.05rem;margin:0 0 .25rem;display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:baseline}
.filters{display:flex;flex-wrap:wrap;gap:.75rem 1.25rem;align-items:flex-end;margin:.75rem 0}.filters label{font-weight:600}
.filters select,.filters input[type=text]{font:inherit;color:var(--fg);background:var(--bg);padding:.35rem;border:2px solid var(--muted);border-radius:3px;max-width:100%}
.filters input[type=text]{width:22rem}
@media (min-width:64rem){table.oneline td,table.oneline th{white-space:nowrap;overflow-wrap:normal}}
.o-ok{fill:var(--c-ok)}.o-latency_breach{fill:var(--c-latency_breach)}.o-server_error{fill:var(--c-server_error)}.o-network_error{fill:var(--c-network_error)}.o-schema_mismatch{fill:var(--c-schema_mismatch)}
.swatch{display:inline-block;width:.8rem;height:.8rem;border-radius:.15rem}
.sw-ok{background:var(--c-ok)}.sw-latency_breach{background:var(--c-latency_breach)}.sw-server_error{background:var(--c-server_error)}.sw-network_error{background:var(--c-network_error)}.sw-schema_mismatch{background:var(--c-schema_mismatch)}
.pager{display:flex;flex-wrap:wrap;gap:1rem;margin:1rem 0}
details{margin:.75rem 0}summary{cursor:pointer;color:var(--muted)}
.field{margin:1.4rem 0}fieldset{border:0;padding:0;margin:1.4rem 0;min-width:0}
label,legend{display:block;font-weight:600}.choice{display:flex;gap:.5rem;align-items:baseline;margin:.35rem 0}.choice label{font-weight:400}
.hint,.for{color:var(--muted);font-size:.9rem;margin:.15rem 0 .35rem}.for{font-style:italic}.js .for{display:none}
.req{font-weight:400;color:var(--muted)}.js-only{display:none}.js .js-only{display:inline}
input[type=text],textarea{width:100%;font:inherit;color:var(--fg);background:var(--bg);padding:.45rem;border:2px solid var(--muted);border-radius:3px}
.error{color:var(--bad);font-weight:600;margin:.15rem 0}.has-error input[type=text],.has-error textarea{border-color:var(--bad)}
.has-error{border-left:4px solid var(--bad);padding-left:.75rem}
.summary,.notice{border:3px solid var(--bad);padding:.75rem 1rem;margin:1rem 0;background:var(--panel)}.summary h2{font-size:1.1rem;margin:0 0 .5rem;border:0}.summary a{color:var(--bad)}
button{font:inherit;font-weight:600;padding:.6rem 1.4rem;border:0;border-radius:3px;background:var(--ok);color:var(--bg);cursor:pointer}
button:focus,input:focus,textarea:focus,a:focus{outline:3px solid var(--warn);outline-offset:1px}
.small{font-size:.9rem;color:var(--muted)}.visually-hidden{position:absolute;left:-10000px}
footer{margin-top:2rem;color:var(--muted);font-size:.9rem;overflow-wrap:anywhere}
@media (max-width:40rem){
body{padding:0 .75rem 2rem}h1{font-size:1.45rem}
dl{grid-template-columns:1fr;gap:0}dd{margin-bottom:.4rem}
table.cards thead{display:none}
table.cards,table.cards caption,table.cards tbody,table.cards tr,table.cards td,table.cards th[scope=row]{display:block;width:100%}
table.cards tr{border:1px solid var(--line);border-radius:.5rem;margin:.6rem 0;padding:.35rem .6rem;background:var(--panel)}
table.cards th[scope=row]{border:0;padding:.15rem 0 .3rem}
table.cards td{display:flex;justify-content:space-between;align-items:center;gap:1rem;border:0;padding:.15rem 0;text-align:right}
table.cards td::before{content:attr(data-label);color:var(--muted);text-align:left;flex:none}
}
`;

/** The pages a site header links to. */
export type PageName = 'status' | 'providers' | 'activity' | 'apply';

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** An instant as `<time>`: `2030-01-01 12:00:00 UTC`, or `never`. */
export function time(iso: string | null): string {
  if (iso === null) return 'never';
  const shown = iso
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC')
    .replace(/Z$/, ' UTC');
  return `<time datetime="${escapeHtml(iso)}">${escapeHtml(shown)}</time>`;
}

/** Micro-units as a decimal without padding zeros: `0.021`, `12.5`, `3`. */
export function money(micro: number): string {
  const fraction = String(Math.abs(micro) % 1e6)
    .padStart(6, '0')
    .replace(/0+$/, '');
  return `${micro < 0 ? '-' : ''}${Math.floor(Math.abs(micro) / 1e6)}${fraction === '' ? '' : `.${fraction}`}`;
}

/** A rate (0..1) as a percentage with up to two decimals: `0.5 %`, `12.25 %`. */
export function percent(rate: number): string {
  return `${Number((rate * 100).toFixed(2))} %`;
}

/** `1 call`, `2 calls`. */
export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** A duration in words: `2 d 3 h`, `4 h 5 min`, `12 min`, `under a minute`. */
export function duration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'under a minute';
  const d = Math.floor(minutes / 1440);
  const h = Math.floor((minutes % 1440) / 60);
  const m = minutes % 60;
  if (d > 0) return h > 0 ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`;
  return `${m} min`;
}

/** Milliseconds, or a dash when there is no figure. */
export const ms = (value: number | null | undefined): string => (value === null || value === undefined ? '–' : `${value} ms`);

/**
 * The header of every page: svc, then status, providers, activity and apply. Pages on the
 * public API and on the indexer link to each other through the listeners' own URLs.
 */
export function siteHeader(urls: PageUrls, current: PageName | null): string {
  const link = (name: PageName, href: string, text: string) =>
    `<a href="${escapeHtml(href)}"${name === current ? ' aria-current="page"' : ''}>${text}</a>`;
  return `<header class="site"><span class="brand">svc</span><nav aria-label="Site">
${link('status', `${urls.api}/status`, 'status')}
${link('providers', `${urls.api}/providers`, 'providers')}
${link('activity', `${urls.indexer}/activity`, 'activity')}
${link('apply', `${urls.api}/apply`, 'apply')}
</nav></header>`;
}

/**
 * The feeds every page names in its `<head>`: the indexer's copies, which feed readers can
 * fetch (the public API's User-Agent filter refuses most of them).
 */
export function feedLinks(urls: PageUrls): string {
  return `<link rel="alternate" type="application/atom+xml" title="svc changelog" href="${escapeHtml(urls.indexer)}/changelog.atom">
<link rel="alternate" type="application/atom+xml" title="svc maintenance" href="${escapeHtml(urls.indexer)}/status.atom">
`;
}

export interface Document {
  title: string;
  current: PageName | null;
  urls: PageUrls;
  main: string;
  footer?: string;
  /** A wider column (for tables whose rows should fit one line on a desktop screen). */
  wide?: boolean;
  /** A script run at the end of the body, under the same nonce as the style (the `/apply` form's). */
  script?: string;
}

/**
 * The whole HTML document, with `nonce` on its `<style>` (and `<script>`). A cached page is
 * rendered with `NONCE_PLACEHOLDER` (once, so no script), which `respond.ts` replaces with a
 * fresh nonce for every response.
 */
export function renderDocument(doc: Document, nonce: string = NONCE_PLACEHOLDER): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(doc.title)}</title>
${feedLinks(doc.urls)}<style nonce="${nonce}">${STYLE}</style>
</head>
<body${doc.wide ? ' class="wide"' : ''}>
${siteHeader(doc.urls, doc.current)}
<main>
${doc.main}
</main>
${doc.footer ? `<footer>${doc.footer}</footer>` : ''}
${doc.script ? `<script nonce="${nonce}">${doc.script}</script>\n` : ''}</body>
</html>
`;
}
