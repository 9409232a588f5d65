/**
 * `{api_url}/` for a person: what svc is, and where to go from here (status, providers,
 * activity, apply, the OpenAPI document, the feeds). Programs asking `/` for JSON keep the
 * 404 they always had (`routes.ts`).
 */
import { escapeHtml, renderDocument } from '../../pages/layout';
import type { PageUrls } from '../../pages/respond';

export function renderHomePage(urls: PageUrls): string {
  const api = escapeHtml(urls.api);
  const indexer = escapeHtml(urls.indexer);
  return renderDocument({
    title: 'svc: an API reliability gateway for AI agents',
    current: null,
    urls,
    main: `<h1>svc</h1>
<p class="lede">An API reliability gateway for AI agents that pay for third-party APIs.</p>
<p>Agents call paid APIs through svc's gateway. svc records the outcome of every call, rates
each provider by its failure rate, and refunds failed calls from a coverage pool, on a
double-entry ledger with signed receipts anyone can check.</p>
<ul id="links">
<li><a href="${api}/status">Status</a>: is svc working, the settler, maintenance and the latest changes</li>
<li><a href="${api}/providers">Providers</a>: each API's reliability tier, failure rate and latency</li>
<li><a href="${indexer}/activity">Activity</a>: settled calls, refunds and their signed receipts</li>
<li><a href="${api}/apply">Apply</a> for a beta API key</li>
<li><a href="${api}/openapi.json">OpenAPI document</a> of this API (and the <a href="${indexer}/openapi.json">indexer's</a>)</li>
<li>Atom feeds: <a href="${indexer}/changelog.atom">changelog</a>, <a href="${indexer}/status.atom">maintenance on and off</a></li>
</ul>`,
  });
}
