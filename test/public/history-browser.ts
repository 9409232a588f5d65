/**
 * The status history and the reworked pages in a real browser (headless Chromium, JavaScript
 * off), on an in-process control seeded with calls spread over several UTC days, a settled
 * batch and a maintenance period: `/` , `/status` with its history, `/providers/<id>` with its
 * 90-day bars, `/activity` with a filter applied, `/apply` and a browser 404, each at desktop
 * light, desktop dark and phone (390 px) widths with no horizontal scroll; chart labels at
 * least the body text's size on a phone; the dashed HIGH_RISK line visible in dark mode;
 * activity rows on one line at 1280 px. With `SVC_SCREENSHOTS_DIR` set, each page at each width
 * is also saved there as a PNG.
 * Skips, saying why, only where /usr/bin/chromium is absent.
 */
import t, { type Test } from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { DAY_MS } from '../../control/public/pages/history';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { addEndpoint, ingest, many, outcome } from '../fixtures/public';
import { openContext, overflow, skipWithoutChromium } from '../fixtures/browser';

const SCREENSHOTS = process.env.SVC_SCREENSHOTS_DIR || null;
const NOW = Date.UTC(2030, 2, 1, 12, 0, 0);
const TODAY = Date.UTC(2030, 2, 1);

/** `calls` calls of `endpoint` by `keyId`, `daysAgo` UTC days back (at `hour`), the first `failed` server errors. */
const day = (endpoint: string, keyId: string, daysAgo: number, calls: number, failed: number, hour = 9) =>
  many(calls, (i) =>
    outcome({
      endpoint_id: endpoint,
      key_id: keyId,
      at: TODAY - daysAgo * DAY_MS + hour * 3_600_000 + i * 1000,
      outcome: i < failed ? (i % 2 ? 'network_error' : 'server_error') : 'ok',
      status: i < failed ? 503 : 200,
      latency_ms: 40 + (i % 7) * 30,
    }),
  );

/** Two providers with calls over several days, a maintenance period, a settled batch. */
async function seed(t: Test): Promise<TestControl> {
  const clock = manualClock(NOW - 12 * DAY_MS);
  const control = await startTestControl(t, {
    now: clock.now,
    env: { SVC_SETTLER_CADENCE_MS: '3600000', SVC_LIMITS_PUBLIC_COUNT: '100000' },
  });
  await addEndpoint(control, 'ep-shots-weather', { display_name: 'Weather v2', price: 20_000, premium: 1_000 });
  await addEndpoint(control, 'ep-shots-search', { display_name: 'Search', price: 20_000, premium: 1_000 });
  await control.admin('PUT', '/_admin/v1/flags/maintenance_mode', { value: true, note: 'moving the database to a bigger host' });
  clock.advance(75 * 60_000);
  await control.admin('PUT', '/_admin/v1/flags/maintenance_mode', { value: false });
  clock.set(NOW);
  const key = (await control.admin('POST', '/_admin/v1/keys', { name: 'shots agent' })).body.id as string;
  const records = [];
  for (let d = 1; d <= 40; d++)
    if (d % 3 !== 0) records.push(...day('ep-shots-weather', key, d, 60, d % 11 === 0 ? 5 : d % 5 === 0 ? 1 : 0));
  for (let d = 1; d <= 70; d += 2) records.push(...day('ep-shots-search', key, d, d % 9 === 0 ? 12 : 30, d % 7 === 0 ? 6 : 0));
  records.push(...day('ep-shots-weather', key, 0, 40, 1, 11), ...day('ep-shots-search', key, 0, 25, 4, 11));
  for (let i = 0; i < records.length; i += 500) await ingest(control, records.slice(i, i + 500));
  if ((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 500_000_000 })).status !== 201) throw new Error('pool fund failed');
  if ((await control.admin('POST', '/_admin/v1/settler/run-once', {})).status !== 200) throw new Error('run-once failed');
  return control;
}

interface Computed {
  fontSize: string;
  stroke: string;
  opacity: string;
  strokeWidth: string;
  background: string;
}

const style = (page: Page, selector: string): Promise<Computed> =>
  page
    .locator(selector)
    .first()
    .evaluate((el): Computed => {
      const s = (globalThis as any).getComputedStyle(el);
      return { fontSize: s.fontSize, stroke: s.stroke, opacity: s.opacity, strokeWidth: s.strokeWidth, background: s.backgroundColor };
    });

/** WCAG contrast ratio of two `rgb(r, g, b)` colours. */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    const [r, g, bl] = (c.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((v) => {
      const s = Number(v) / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

const MODES = [
  { name: 'desktop-light', width: 1280, scheme: 'light' },
  { name: 'desktop-dark', width: 1280, scheme: 'dark' },
  { name: 'phone', width: 390, scheme: 'light' },
] as const;

if (!skipWithoutChromium(t, 'the status history pages')) {
  t.test('status with history, 90-day bars, filtered activity, apply, 404: desktop light, dark and phone', async (t) => {
    const control = await seed(t);
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const api = control.urls.api;
    const weather = ids.provider('ep-shots-weather');
    const context = await openContext(t, { javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(15_000);
    const problems: string[] = [];
    page.on('console', (msg) => {
      if (/Content.Security.Policy/i.test(msg.text())) problems.push(msg.text());
    });
    if (SCREENSHOTS !== null) mkdirSync(SCREENSHOTS, { recursive: true });

    const pages: { name: string; url: string; status: number; dark?: boolean }[] = [
      { name: 'home', url: `${api}/`, status: 200 },
      { name: 'status', url: `${api}/status`, status: 200 },
      { name: 'provider', url: `${api}/providers/${weather}`, status: 200 },
      { name: 'activity-filtered', url: `${control.urls.indexer}/activity?provider=${weather}&outcome=ok&call=`, status: 200 },
      { name: 'apply', url: `${api}/apply`, status: 200, dark: true },
      { name: 'not-found', url: `${api}/no-such-page`, status: 404 },
    ];
    for (const p of pages) {
      for (const mode of MODES) {
        const scheme = p.dark && mode.name === 'phone' ? 'dark' : mode.scheme;
        await page.emulateMedia({ colorScheme: scheme });
        await page.setViewportSize({ width: mode.width, height: 844 });
        t.equal((await page.goto(p.url))?.status(), p.status, `${p.name} ${mode.name}: ${p.status}`);
        const bg = (await style(page, 'body')).background;
        t.equal(bg, scheme === 'dark' ? 'rgb(13, 17, 23)' : 'rgb(255, 255, 255)', `${p.name} ${mode.name}: the ${scheme} scheme`);
        const o = await overflow(page);
        t.ok(
          o.scrollWidth <= o.width && o.over.length === 0,
          `${p.name} ${mode.name}: no horizontal scroll (${o.scrollWidth}/${o.width}${o.over.length ? `; ${o.over.join(', ')}` : ''})`,
        );
        if (SCREENSHOTS !== null) {
          const file = `${p.name}-${mode.name}${scheme === 'dark' && mode.name === 'phone' ? '-dark' : ''}.png`;
          await page.screenshot({ path: join(SCREENSHOTS, file), fullPage: true });
        }
        await checks(t, page, p.name, mode.name, scheme);
      }
    }
    if (SCREENSHOTS !== null) t.comment(`screenshots in ${SCREENSHOTS}`);
    t.same(problems, [], 'no CSP violation');
  });
}

/** What each page must show, per mode. */
async function checks(t: Test, page: Page, name: string, mode: string, scheme: 'light' | 'dark'): Promise<void> {
  const body = parseFloat((await style(page, 'body')).fontSize);
  if (name === 'status') {
    t.ok((await page.locator('#provider-history > li').count()) === 2, 'status: a history row per provider');
    t.ok((await page.locator('#provider-history rect.day').count()) > 40, 'status: daily bars');
    const box = await page.locator('#provider-history svg.days').first().boundingBox();
    t.ok(box !== null && box.width > 300 && box.height >= 20, `status ${mode}: the bars are drawn (${box?.width}×${box?.height})`);
    t.match(await page.locator('#provider-history').innerText(), /uptime \d+(\.\d+)? % \(30 days\), \d+(\.\d+)? % \(90 days\)/);
    const incidents = await page.locator('#incidents > li').allInnerTexts();
    t.ok(incidents.length >= 3, 'status: incidents listed');
    t.match(
      incidents.find((i) => i.startsWith('Maintenance')),
      /1 h 15 min[\s\S]*moving the database/,
      'the maintenance period with its duration and note',
    );
    t.notOk(await page.locator('#bootstrap').isVisible(), 'status: the internals are collapsed under Details');
  }
  if (name === 'provider' || name === 'status') {
    for (const label of await page.locator('p.axis').all()) {
      const size = parseFloat(await label.evaluate((el) => (globalThis as any).getComputedStyle(el).fontSize as string));
      t.ok(size >= body, `${name} ${mode}: chart labels at least the body text's size (${size} ≥ ${body} px)`);
    }
  }
  if (name === 'provider') {
    t.equal(await page.locator('svg#days rect.day').count(), 27 + 1, 'provider: a bar per day with calls');
    t.match(await page.locator('.spark-now').innerText(), /^latest \d+(\.\d+)? %$/, 'provider: the current rate beside the sparkline');
    const limit = await style(page, 'svg.spark line.limit');
    const bg = (await style(page, 'body')).background;
    t.ok(
      contrast(limit.stroke, bg) >= 3,
      `provider ${mode}: the HIGH_RISK line stands out from the ${scheme} background (${limit.stroke} on ${bg})`,
    );
    t.equal(limit.opacity, '1', 'not faded');
    t.ok(parseFloat(limit.strokeWidth) >= 1, 'at least a unit wide');
  }
  if (name === 'activity-filtered') {
    t.ok((await page.locator('#calls tbody tr').count()) > 0, 'activity: the filtered calls');
    t.same(
      [...new Set((await page.locator('#calls tbody td[data-label="Outcome"]').allInnerTexts()).map((s) => s.split(/\s/)[0]))],
      ['ok'],
    );
    t.equal(await page.locator('#f-outcome').inputValue(), 'ok', 'the form shows the filter');
    if (mode !== 'phone') {
      const heights = await page.locator('#calls tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getBoundingClientRect().height));
      const line = parseFloat(
        await page
          .locator('#calls tbody td')
          .first()
          .evaluate((el) => (globalThis as any).getComputedStyle(el).lineHeight as string),
      );
      t.ok(
        Math.max(...heights) < 2 * line,
        `activity ${mode}: every row on one line (tallest ${Math.max(...heights)} px, a line is ${line} px)`,
      );
    }
  }
  if (name === 'apply') {
    t.ok(await page.locator('label[for="f-building"] .req').isVisible(), 'apply: required questions are marked');
  }
}
