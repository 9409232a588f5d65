/**
 * What a person sees where they used to get raw JSON, in a real browser (Debian's Chromium
 * through playwright-core; in-process control on seeded data): the landing page at
 * `{api_url}/` and where its links go, `{indexer_url}/` landing on `/activity`, a 404 and a 405
 * as pages of the site on both hosts, no horizontal scroll at 390 px for the landing page and
 * the 404, the application form and its thank-you page on the site's layout (dark under
 * `prefers-color-scheme: dark`), and every page's feed links pointing at the indexer's copies.
 * The CSP reports nothing and nothing loads but the pages themselves. Screenshots go to
 * `$SVC_SCREENSHOTS_DIR` (default: `svc-page-screenshots` in the OS temp dir).
 *
 * Skips, saying why, only where /usr/bin/chromium is absent.
 */
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { seedPages } from '../fixtures/pages';
import { openContext, skipWithoutChromium } from '../fixtures/browser';

const SCREENSHOTS = process.env.SVC_SCREENSHOTS_DIR ?? join(tmpdir(), 'svc-page-screenshots');
const BACKGROUND = { light: 'rgb(255, 255, 255)', dark: 'rgb(13, 17, 23)' } as const;

const background = (page: Page): Promise<string> =>
  page.evaluate(() => (globalThis as any).getComputedStyle((globalThis as any).document.body).backgroundColor as string);

const scrollWidth = (page: Page): Promise<number> =>
  page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);

const feedLinks = (page: Page): Promise<string[]> =>
  page.locator('link[rel="alternate"]').evaluateAll((links) => links.map((l) => l.getAttribute('href') ?? ''));

if (!skipWithoutChromium(t, 'the pages for people')) {
  t.test('the landing page, the roots, error pages, the apply form in dark mode, feed links', async (t) => {
    const { control } = await seedPages(t, { SVC_LIMITS_PUBLIC_COUNT: '100000' });
    const { api, indexer } = control.urls;
    const provider = new OpaqueIds(control.handle.ctx.store.idSecret).provider('zq-flaky-endpoint');
    const context = await openContext(t, { javaScriptEnabled: true, viewport: { width: 1280, height: 900 } });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(15_000);
    const problems: string[] = [];
    const loads: string[] = [];
    page.on('console', (msg) => {
      if (/Content.Security.Policy/i.test(msg.text())) problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('request', (req) => {
      if (!req.isNavigationRequest()) loads.push(req.url());
    });
    mkdirSync(SCREENSHOTS, { recursive: true });

    // The landing page: what svc is, and its links lead somewhere.
    t.equal((await page.goto(`${api}/`))?.status(), 200, 'the landing page');
    t.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'svc');
    t.match(await page.locator('main').innerText(), /API reliability gateway for AI agents/, 'says what svc is');
    for (const [name, url, heading] of [
      ['Status', `${api}/status`, null],
      ['Providers', `${api}/providers`, 'Providers'],
      ['Activity', `${indexer}/activity`, null],
      ['Apply', `${api}/apply`, 'Apply for svc private beta access'],
      ['OpenAPI document', `${api}/openapi.json`, null],
      ['changelog', `${indexer}/changelog.atom`, null],
      ['maintenance on and off', `${indexer}/status.atom`, null],
    ] as const) {
      const link = page.locator('#links').getByRole('link', { name, exact: true });
      t.equal(await link.getAttribute('href'), url, `the landing page links ${name} to ${url}`);
      if (heading !== null) {
        await link.click();
        t.equal(page.url(), url, `${name}: followed`);
        t.equal(await page.getByRole('heading', { level: 1 }).innerText(), heading, `${name}: arrives on its page`);
        await page.goBack();
      }
    }

    // The indexer's root lands on the activity page.
    const root = await page.goto(`${indexer}/`);
    t.equal(page.url(), `${indexer}/activity`, '{indexer_url}/ lands on /activity');
    t.equal(root?.status(), 200);

    // Errors are pages: status, code, a way back.
    for (const [host, base] of [
      ['api', api],
      ['indexer', indexer],
    ] as const) {
      const res = await page.goto(`${base}/no-such-page`);
      t.equal(res?.status(), 404, `${host}: 404`);
      t.equal(res?.headers()['content-type'], 'text/html; charset=utf-8', `${host}: a page, not JSON`);
      t.match(await page.getByRole('heading', { level: 1 }).innerText(), /^404 /, `${host}: the status as its heading`);
      t.equal(await page.locator('#error-code').innerText(), 'svc_not_found', `${host}: the error code`);
      t.equal(await background(page), BACKGROUND.light, `${host}: styled by the site's stylesheet`);
      await page.locator('#back').click();
      t.equal(page.url(), `${api}/`, `${host}: the way back leads to the landing page`);
    }
    const bad = await page.goto(`${api}/providers?sort=nonsense`);
    t.equal(bad?.status(), 400, 'a bad parameter: 400');
    t.equal(await page.locator('#error-code').innerText(), 'svc_bad_request', 'as a page with its code');

    // Phone width (a phone's layout viewport, as on a real one): nothing scrolls sideways.
    const phone = await (
      await openContext(t, { javaScriptEnabled: true, viewport: { width: 390, height: 844 }, isMobile: true })
    ).newPage();
    for (const [name, url] of [
      ['home', `${api}/`],
      ['404', `${api}/no-such-page/${'a-long-path-segment'.repeat(6)}`],
      ['404-indexer', `${indexer}/no-such-page`],
      ['apply', `${api}/apply`],
    ] as const) {
      for (const scheme of ['light', 'dark'] as const) {
        for (const p of [phone, page]) await p.emulateMedia({ colorScheme: scheme });
        await phone.goto(url);
        t.equal(await background(phone), BACKGROUND[scheme], `${name} ${scheme} 390 px: the ${scheme} background`);
        const scrolled = await scrollWidth(phone);
        t.ok(scrolled <= 390, `${name} ${scheme} 390 px: no horizontal scroll (${scrolled} <= 390)`);
        await phone.screenshot({ path: join(SCREENSHOTS, `${name}-390-${scheme}.png`), fullPage: true });
        await page.goto(url);
        await page.screenshot({ path: join(SCREENSHOTS, `${name}-1280-${scheme}.png`), fullPage: true });
      }
    }

    // The application form and its thank-you page are pages of the site: dark under a dark scheme.
    await page.emulateMedia({ colorScheme: 'dark' });
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 844 });
      await page.goto(`${api}/apply`);
      t.equal(await background(page), BACKGROUND.dark, `apply ${width} px: the dark background`);
      t.equal(await page.locator('header.site a[aria-current="page"]').innerText(), 'apply', 'apply: the site header, apply current');
      const input = await page
        .locator('#f-contact_name')
        .evaluate((el) => (globalThis as any).getComputedStyle(el).backgroundColor as string);
      t.equal(input, BACKGROUND.dark, `apply ${width} px: fields are dark too`);
    }
    t.ok(await page.locator('#apis-field').isHidden(), 'the form script still runs under the CSP');
    await page.goto(`${api}/apply/thanks?id=app_AAAAAAAAAAAA`);
    t.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Application received');
    t.equal(await background(page), BACKGROUND.dark, 'the thank-you page: the dark background');
    await page.emulateMedia({ colorScheme: 'light' });
    t.equal(await background(page), BACKGROUND.light, 'and light under a light scheme');

    // Every page names the indexer's copies of the feeds, which feed readers can fetch.
    const indexerFeeds = [`${indexer}/changelog.atom`, `${indexer}/status.atom`];
    for (const url of [
      `${api}/`,
      `${api}/status`,
      `${api}/providers`,
      `${api}/providers/${provider}`,
      `${api}/apply`,
      `${api}/apply/thanks`,
      `${indexer}/activity`,
      `${api}/no-such-page`,
      `${indexer}/no-such-page`,
    ]) {
      await page.goto(url);
      t.same(await feedLinks(page), indexerFeeds, `${url}: its alternate links are the indexer's feeds`);
    }
    for (const feed of indexerFeeds) {
      const res = await page.request.get(feed, { headers: { 'user-agent': 'NetNewsWire (RSS Reader; https://netnewswire.com/)' } });
      t.equal(res.status(), 200, `${feed}: a feed reader fetches it`);
    }

    t.same(problems, [], 'no CSP violation and no error');
    t.same(loads, [], 'nothing loads but the pages themselves');
    t.comment(`screenshots in ${SCREENSHOTS}`);
  });
}
