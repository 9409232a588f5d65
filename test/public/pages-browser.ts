/**
 * The public pages in a real browser: headless Chromium (Debian's `/usr/bin/chromium`) driven
 * by playwright-core.
 *
 * - On seeded data (one provider per tier, in-process control), with JavaScript off: the
 *   providers table has a row per provider with its tier, each sparkline's points sit where
 *   the seeded hourly rates put them, the sort links reorder the table, and on every page
 *   (providers, one provider, activity, status) both colour schemes apply, nothing overflows a
 *   390-px viewport, the CSP reports nothing, nothing but the page itself loads, and a reload
 *   answered 304 keeps the page styled. Screenshots of each page at 390 px and 1280 px in both
 *   schemes go to `$SVC_SCREENSHOTS_DIR` (default: `svc-page-screenshots` in the OS temp dir,
 *   outside the repository).
 * - On a live stack (control and a gateway as real processes, a real upstream), with
 *   JavaScript on: after real calls are settled, the providers table, the sparkline (one point:
 *   the calls of the last hour), the provider's bars (one bar with every call) and the activity
 *   page with its receipt links, with no JavaScript error and no CSP violation.
 *
 * Skips, saying why, only where /usr/bin/chromium is absent.
 */
import t, { type Test } from 'tap';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { PROVIDERS, hourRate, seedPages } from '../fixtures/pages';
import { GENEROUS_LIMITS, drained, request, startStack } from '../fixtures/stack';
import { ok, startUpstream } from '../fixtures/upstream';
import { openContext, overflow, skipWithoutChromium } from '../fixtures/browser';

const SCREENSHOTS = process.env.SVC_SCREENSHOTS_DIR ?? join(tmpdir(), 'svc-page-screenshots');

/** What each scheme paints (the stylesheet's --bg, a RELIABLE badge, an ok bar). */
const SCHEMES = {
  light: { background: 'rgb(255, 255, 255)', reliable: 'rgb(10, 107, 45)' },
  dark: { background: 'rgb(13, 17, 23)', reliable: 'rgb(86, 211, 100)' },
} as const;

interface Browser {
  page: Page;
  /** CSP reports, console errors and page errors seen so far. */
  problems: string[];
  /** Requests that were not a page navigation (the pages load nothing). */
  loads: string[];
}

async function openBrowser(t: Test, javaScriptEnabled: boolean): Promise<Browser> {
  const context = await openContext(t, { javaScriptEnabled, viewport: { width: 1280, height: 900 } });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  const loads: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' || /Content.Security.Policy/i.test(msg.text())) problems.push(msg.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('requestfinished', async (req) => {
    const res = await req.response();
    if (res !== null && res.status() >= 400) problems.push(`${res.status()} ${req.url()}`);
  });
  page.on('request', (req) => {
    if (!req.isNavigationRequest()) loads.push(req.url());
  });
  return { page, problems, loads };
}

const css = (page: Page, selector: string, property: string): Promise<string> =>
  page
    .locator(selector)
    .first()
    .evaluate((el, p) => (globalThis as any).getComputedStyle(el).getPropertyValue(p) as string, property);

if (!skipWithoutChromium(t, 'the public pages')) {
  t.test('seeded providers, without JavaScript: tiers, sparklines, sorting, schemes, 390 px', async (t) => {
    const { control } = await seedPages(t, { SVC_LIMITS_PUBLIC_COUNT: '100000' });
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const { page, problems, loads } = await openBrowser(t, false);
    const api = control.urls.api;

    t.equal((await page.goto(`${api}/providers`))?.status(), 200);
    t.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Providers');
    const rows = page.locator('#providers tbody tr');
    t.equal(await rows.count(), PROVIDERS.length, 'a row per provider');
    for (const p of PROVIDERS) {
      const row = page.locator(`tr[data-provider="${ids.provider(p.endpoint)}"]`);
      t.equal(await row.locator('.tier').innerText(), p.tier, `${p.endpoint}: shows ${p.tier}`);
      if (p.displayName !== null) t.match(await row.innerText(), p.displayName, 'its display name');
      const points = await row
        .locator('svg.spark circle.pt')
        .evaluateAll((cs) => cs.map((c) => [Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))]));
      const hours = [...p.hours].sort((a, b) => b.ago - a.ago);
      t.equal(points.length, hours.length, `${p.tier}: a sparkline point per hour with calls`);
      const scale = Math.max(0.1, ...hours.map(hourRate));
      hours.forEach((h, k) => {
        t.ok(Math.abs(points[k]![0]! - (2 + (116 * (24 - h.ago)) / 23)) < 0.01, `${p.tier}: point ${k} is hour -${h.ago}`);
        t.ok(
          Math.abs(points[k]![1]! - (26 - (24 * hourRate(h)) / scale)) < 0.01,
          `${p.tier}: at its rate ${(hourRate(h) * 100).toFixed(1)} %`,
        );
      });
      const box = await row.locator('svg.spark').boundingBox();
      t.ok(box !== null && box.width >= 100 && box.height >= 20, `${p.tier}: the sparkline is drawn (${box?.width}×${box?.height})`);
    }
    t.ok(
      await page.locator('#tier-legend').getByText('fewer than 20 calls in the last 24 h: too few to rate').isVisible(),
      'the legend says what UNRATED means',
    );

    // Sorting by links alone (JavaScript is off).
    const tiers = () => page.locator('#providers tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-tier')));
    t.same(await tiers(), ['RELIABLE', 'ELEVATED', 'HIGH_RISK', 'UNRATED'], 'best tier first by default');
    await page.click('th a[data-sort="failure_rate"]');
    t.match(page.url(), /\?sort=failure_rate&order=asc$/, 'the header link navigates');
    t.same(await tiers(), ['RELIABLE', 'ELEVATED', 'HIGH_RISK', 'UNRATED'], 'lowest failure rate first');
    await page.click('th a[data-sort="failure_rate"]');
    t.same(await tiers(), ['HIGH_RISK', 'ELEVATED', 'RELIABLE', 'UNRATED'], 'clicked again: highest first, UNRATED still last');
    t.equal(await page.locator('th[aria-sort="descending"]').innerText(), 'Failure rate ▼', 'the sorted column says so');
    await page.getByRole('link', { name: 'tier, worst first' }).click();
    t.same(await tiers(), ['HIGH_RISK', 'ELEVATED', 'RELIABLE', 'UNRATED'], 'tier, worst first');

    // Every page: both schemes, 390 px, desktop; screenshots.
    mkdirSync(SCREENSHOTS, { recursive: true });
    const flaky = ids.provider('zq-flaky-endpoint');
    const pages: [string, string][] = [
      ['providers', `${api}/providers`],
      ['provider', `${api}/providers/${flaky}`],
      ['activity', `${control.urls.indexer}/activity`],
      ['status', `${api}/status`],
    ];
    for (const [name, url] of pages) {
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const width of [390, 1280]) {
          await page.setViewportSize({ width, height: 844 });
          t.equal((await page.goto(url))?.status(), 200, `${name}: 200`);
          t.equal(
            await css(page, 'body', 'background-color'),
            SCHEMES[scheme].background,
            `${name} ${scheme} ${width}px: the ${scheme} background`,
          );
          // The provider page's hourly numbers are in a closed <details>: open it (no script needed) so they are measured too.
          if (name === 'provider') await page.locator('details:has(#hourly) > summary').click();
          if (name === 'provider') t.ok(await page.locator('#hourly').isVisible(), 'provider: the hourly table opens');
          const o = await overflow(page);
          t.ok(
            o.scrollWidth <= o.width && o.over.length === 0,
            `${name} ${scheme} ${width}px: nothing wider than the viewport (${o.scrollWidth}/${o.width}${o.over.length ? `; ${o.over.join(', ')}` : ''})`,
          );
          await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}-${scheme}.png`), fullPage: true });
        }
        if (name === 'providers')
          t.equal(
            await css(page, '.tier-RELIABLE', 'color'),
            SCHEMES[scheme].reliable,
            `providers: the RELIABLE colour of the ${scheme} scheme`,
          );
        if (name === 'provider') {
          t.equal(await page.locator('svg.chart g.bar').count(), 3, 'provider: a bar per seeded hour');
          t.not(
            await css(page, 'svg.chart rect.o-ok', 'fill'),
            'rgb(0, 0, 0)',
            `provider: the bars are coloured by the stylesheet (${scheme})`,
          );
        }
      }
    }
    t.comment(`screenshots in ${SCREENSHOTS}`);

    // A reload is revalidated (If-None-Match → 304); the page keeps its styles under its stored CSP.
    await page.emulateMedia({ colorScheme: 'dark' });
    const etag = (await (await page.goto(`${api}/providers`))!.allHeaders()).etag;
    const revalidated = page.waitForResponse(`${api}/providers`);
    await page.reload();
    const answer = await revalidated;
    // Playwright reports the stored response (200); the raw headers are the 304's.
    t.equal((await answer.request().allHeaders())['if-none-match'], etag, 'the reload asks with the page’s ETag');
    t.notOk('content-type' in (await answer.allHeaders()), 'and is answered 304 (no body)');
    t.equal(await css(page, 'body', 'background-color'), SCHEMES.dark.background, 'and the page is still styled');

    t.same(problems, [], 'no CSP violation and no error');
    t.same(loads, [], 'nothing loads but the pages themselves');
  });

  t.test('a live stack with JavaScript on: real calls, settled, on every page', async (t) => {
    const stack = await startStack(t, {
      controlEnv: { ...GENEROUS_LIMITS, SVC_SETTLER_CADENCE_MS: '3600000', SVC_CACHE_PROVIDERS_TTL_S: '1', SVC_CACHE_STATS_TTL_S: '1' },
    });
    const up = await startUpstream(t);
    up.on('/good/*', ok());
    up.on('/bad/*', ok({ status: 500, body: { error: 'down' } }));
    await stack.addEndpoint({ id: 'live-good', upstream: `${up.url}/good`, price: 1_000_000, premium: 10_000, display_name: 'Good API' });
    await stack.addEndpoint({ id: 'live-bad', upstream: `${up.url}/bad`, price: 1_000_000, premium: 10_000 });
    const key = await stack.issueKey({ name: 'live agent' });
    await stack.applied(await stack.version());
    t.equal((await stack.cli(['pool', 'fund', '10.0'])).code, 0, 'pool funded');
    const bearer = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' };
    for (let i = 0; i < 12; i++) t.equal((await request(stack.gateway, '/v1/live-good/x', { headers: bearer, body: '{}' })).status, 200);
    for (let i = 0; i < 5; i++) t.equal((await request(stack.gateway, '/v1/live-bad/x', { headers: bearer, body: '{}' })).status, 500);
    await drained(stack.gateway);
    const run = await stack.cli(['settler', 'run-once', '--json']);
    t.equal(run.code, 0, run.stderr);
    // No page of this stack has been built yet: the first visit of each builds it after the run.

    const { page, problems, loads } = await openBrowser(t, true);
    const api = stack.control.urls.api!;
    t.equal((await page.goto(`${api}/providers`))?.status(), 200);
    t.equal(await page.locator('#providers tbody tr').count(), 2, 'a row per provider');
    const good = page.locator('#providers tbody tr', { hasText: 'Good API' });
    t.equal(await good.locator('.tier').innerText(), 'UNRATED', '12 calls are fewer than tiers.minCalls');
    t.equal(await good.locator('svg.spark circle.pt').count(), 1, 'one sparkline point: every call was in the last hour');
    const bad = page.locator('#providers tbody tr').filter({ hasNotText: 'Good API' });
    t.match(await bad.innerText(), /100 %/, 'the failing provider: 100 %');
    t.equal(await bad.locator('svg.spark circle.pt').count(), 1);
    t.equal(await bad.locator('svg.spark circle.pt').getAttribute('cy'), '2', 'at the top of its scale');
    for (const secret of ['live-good', 'live-bad', up.url, key.id, 'gw-1'])
      t.notOk((await page.content()).includes(secret), `the page does not show ${secret}`);

    await bad.getByRole('link').first().click();
    t.equal(await page.locator('svg.chart g.bar').count(), 1, 'the provider page: one bar');
    t.equal(await page.locator('svg.chart g.bar').getAttribute('data-calls'), '5', 'holding the five calls');
    t.equal(await page.locator('svg.chart g.bar rect.o-server_error').count(), 1, 'all server errors');
    t.equal(await page.locator('#refunds tbody tr').count(), 5, 'its five refunds');
    const receiptHref = await page.locator('#refunds tbody tr a').first().getAttribute('href');

    t.equal((await page.goto(`${stack.control.urls.indexer}/activity`))?.status(), 200);
    t.match(await page.locator('#totals').innerText(), /17 calls in 2 batches/, 'the ledger’s totals');
    t.equal(await page.locator('#batches tbody tr').count(), 2, 'two settled batches');
    t.equal(await page.locator('#calls tbody tr').count(), 17, 'every call');
    t.equal(await page.locator('#recent-refunds tbody tr').count(), 5, 'the five refunds');
    const receipt = await page.locator('#batches a[data-receipt]').first().getAttribute('href');
    const answer = await page.goto(`${stack.control.urls.indexer}${receipt}`);
    t.equal(answer?.status(), 200, 'a batch link opens its receipt');
    t.match(await answer!.json(), { batch: Number(receipt!.split('/').pop()), sig: /\S+/ }, 'the signed receipt');
    t.equal((await page.goto(receiptHref!))?.status(), 200, 'so does a refund’s receipt link on the provider page');

    t.equal((await page.goto(`${api}/status`))?.status(), 200);
    await page.getByRole('link', { name: 'providers and their reliability' }).click();
    t.match(page.url(), /\/providers$/, '/status links to the providers');
    await page.getByRole('navigation', { name: 'Site' }).getByRole('link', { name: 'activity' }).click();
    t.match(page.url(), /\/activity$/, 'the header links across to the indexer');
    t.same(problems, [], 'no JavaScript error and no CSP violation');
    t.same(loads, [], 'nothing loads but the pages themselves');
  });
}
