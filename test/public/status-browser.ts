/**
 * The status page in a real browser: headless Chromium (Debian's `/usr/bin/chromium`) driven
 * by playwright-core, with JavaScript switched off. Control and a gateway run as real
 * processes; the test reads what a visitor sees: bootstrap state (database, pool, endpoints,
 * gateways with their snapshot versions), the settler, the gate, maintenance with its note,
 * each changed with `svcctl` in between.
 * Skips, saying why, only where /usr/bin/chromium is absent.
 */
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { manualClock, startTestControl } from '../fixtures/control';
import { addEndpoint } from '../fixtures/public';
import { startStack, svcctl, waitFor } from '../fixtures/stack';
import type { SettlerStatus } from '../../protocol/settlement';
import { openContext, skipWithoutChromium } from '../fixtures/browser';

if (!skipWithoutChromium(t, 'the status page')) {
  t.test('what a visitor sees on a live stack (real control and gateway processes)', async (t) => {
    const stack = await startStack(t, { controlEnv: { SVC_CACHE_STATUS_TTL_S: '1' } });
    await stack.addEndpoint({ id: 'weather', upstream: 'http://127.0.0.1:9/v1' });
    await stack.applied(await stack.version());
    const api = stack.control.urls.api!;

    const { page, visit: load, clean } = await openPage(t);
    const visit = async () => t.equal(await load(`${api}/status`), 200, 'the page answers 200 to a browser');
    t.equal(await load(`${api}/status`, false), 200);

    t.equal(await page.locator('html').getAttribute('lang'), 'en', 'the document has a language');
    t.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'svc status');
    for (const name of ['Providers over the last 90 days', 'Incident history', 'Maintenance', 'Private beta', 'Latest changes']) {
      t.ok(await page.getByRole('heading', { level: 2, name }).isVisible(), `section heading "${name}" is visible`);
    }
    t.notOk(await page.locator('#bootstrap').isVisible(), 'the operators’ internals start collapsed');
    await page.locator('#details > summary').click();
    for (const name of ['Bootstrap', 'Settler'])
      t.ok(await page.getByRole('heading', { level: 3, name }).isVisible(), `"${name}" is under Details, which opens without script`);
    const bootstrap = await page.locator('#bootstrap').innerText();
    t.match(bootstrap, /Database\s+ready \(schema version \d+\)/, 'database ready');
    t.match(bootstrap, /Coverage pool\s+not funded/, 'pool not funded');
    t.match(bootstrap, /Endpoints registered\s+1/, 'one endpoint registered');
    t.match(bootstrap, /Gateways connected\s+1 of 1 known/, 'the gateway is connected');
    const version = await stack.version();
    const table = page.getByRole('table');
    t.match(await table.locator('caption').innerText(), `control is at version ${version}`);
    const row = await table.locator('tbody tr').first().innerText();
    t.match(
      row,
      new RegExp(`^gw_\\w{8}\\s+yes\\s+${version}\\s+0\\s+`),
      'gateway row: opaque id, connected, its snapshot version, 0 behind',
    );
    t.notMatch(await page.content(), /gw-1/, 'the gateway’s own id is not published');
    t.match(
      await page.locator('#settler').innerText(),
      /State\s+idle \(waiting for its next run\)\s+Cadence\s+every 5 s/,
      'the settler is idle between runs',
    );
    t.match(await page.locator('#beta-gate').innerText(), /The beta gate is off/);
    t.match(await page.locator('#overall').innerText(), /Overall: Operational/);

    for (const args of [
      ['flag', 'set', 'maintenance_mode', 'on', '--note', 'shipping a fix'],
      ['settler', 'pause'],
      ['pool', 'fund', '12.5'],
    ]) {
      const run = await stack.cli(args);
      t.equal(run.code, 0, `svcctl ${args.join(' ')}: ${run.stderr}`);
    }
    // The page is cached for cache.statusTtlS = 1: load it until a build after the changes shows them.
    await waitFor(async () => {
      await visit();
      return /Under maintenance/.test(await page.locator('#overall').innerText());
    }, 'the status page to show the changes');
    t.match(await page.locator('#overall').innerText(), /Overall: Under maintenance/);
    t.match(
      await page.getByRole('region', { name: 'Maintenance' }).innerText(),
      /Maintenance mode is on since .*Note from the operators: .?shipping a fix/s,
      'maintenance and its note are visible',
    );
    t.match(await page.getByRole('region', { name: 'Latest changes' }).innerText(), /maintenance_mode turned on: shipping a fix/);
    t.match(await page.locator('#settler').innerText(), /State\s+paused by an operator/, 'the operator paused the settler');
    t.match(await page.locator('#bootstrap').innerText(), /Coverage pool\s+funded \(12\.5\)/, 'the pool is funded');

    const gw = await svcctl(['--data-dir', stack.dataDir, 'flag', 'get', 'maintenance_mode', '--json']);
    t.equal(gw.json().value, true);
    const blocked = await fetch(`${stack.gateway}/weather/x`, { method: 'POST' });
    t.equal(blocked.status, 503, 'and the gateway answers 503 meanwhile');
    t.equal(((await blocked.json()) as { code: string }).code, 'svc_maintenance');
    clean();
  });

  t.test('settler state and a funded pool, in the browser (in-process control)', async (t) => {
    const clock = manualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
    const control = await startTestControl(t, { now: clock.now, env: { SVC_CACHE_STATUS_TTL_S: '1' } });
    await addEndpoint(control, 'weather');
    const ctx = control.handle.ctx;
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 1_500_000 })).status, 201);
    const settler: SettlerStatus = {
      state: 'idle',
      halted: null,
      leader: null,
      cadence_ms: 5000,
      batch_cap: 100,
      backlog: 3,
      lag_ms: 4000,
      last_run_at: new Date(clock.now() - 1000).toISOString(),
      last_batch: { id: 17, endpoint_id: 'weather', calls: 4, refunds: 0, premiums: 400, at: new Date(clock.now() - 1000).toISOString() },
      last_error: null,
    };
    ctx.settler = async () => settler;

    const { page, visit, clean } = await openPage(t);
    t.equal(await visit(`${control.urls.api}/status`), 200);
    const text = await page.locator('#settler').innerText();
    t.match(text, /State\s+idle \(waiting for its next run\)/);
    t.match(text, /Cadence\s+every 5 s, up to 100 calls per batch/);
    t.match(text, /Backlog\s+3 calls waiting to be settled \(oldest 4 s old\)/);
    t.match(text, /Last batch\s+batch 17 for prv_\w{12} at .*: 4 calls, refunds 0, premiums 0\.0004/);
    t.match(await page.locator('#bootstrap').innerText(), /Coverage pool\s+funded \(1\.5\)/);

    settler.state = 'paused';
    clock.advance(1_000);
    await visit(`${control.urls.api}/status`);
    t.match(await page.locator('#settler').innerText(), /State\s+paused by an operator/);
    settler.state = 'running';
    clock.advance(1_000);
    await visit(`${control.urls.api}/status`);
    t.match(await page.locator('#settler').innerText(), /State\s+running/);

    // The inline style applies under the page's CSP (a wrong hash would leave it unstyled).
    t.equal(
      await page
        .locator('body')
        .evaluate((b) => (globalThis as unknown as { getComputedStyle(e: unknown): { maxWidth: string } }).getComputedStyle(b).maxWidth),
      '960px',
      'the inline style is allowed by the CSP',
    );
    clean();
  });
}

/**
 * A fresh Chromium profile with JavaScript off (the page must not need it), closed in
 * teardown. `clean()` asserts that no request left the page's origin and no CSP violation was
 * reported. `visit(url)` loads a page past the browser's own cache (the page is cacheable for
 * `cache.statusTtlS`; the tests move control's clock, not the browser's) and opens its "Details"
 * unless `details` is false.
 */
async function openPage(
  t: Test,
): Promise<{ page: Page; visit: (url: string, details?: boolean) => Promise<number | undefined>; clean: () => void }> {
  const context = await openContext(t, { javaScriptEnabled: false });
  const foreign: string[] = [];
  const violations: string[] = [];
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);
  let origin: string | null = null;
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (origin === null) origin = url.origin;
    else if (url.origin !== origin) foreign.push(req.url());
  });
  page.on('console', (msg) => {
    if (/Content.Security.Policy/i.test(msg.text())) violations.push(msg.text());
  });
  let n = 0;
  return {
    page,
    // Opens the collapsed "Details" (schema and snapshot versions, the settler) after each load.
    visit: async (url, details = true) => {
      const status = (await page.goto(`${url}?visit=${++n}`))?.status();
      if (details) await page.locator('#details > summary').click();
      return status;
    },
    clean: () => {
      t.same(foreign, [], 'no request left the page’s origin');
      t.same(violations, [], 'no Content-Security-Policy violation');
    },
  };
}
