/**
 * `GET /api/v1/status`, `GET /status` and `GET /api/v1/changelog` in-process: bootstrap
 * state, the settler (running / idle / paused, or "not running" when none runs), the beta
 * gate, maintenance with its note (set by `svcctl flag set`), the changelog newest first,
 * and an HTML page that escapes what operators wrote and loads nothing from outside.
 */
import t from 'tap';
import { manualClock, startTestControl } from '../fixtures/control';
import { runCli } from '../fixtures/cli';
import { CHROME_UA, addEndpoint, get } from '../fixtures/public';
import { forEachStore } from '../fixtures/stores';
import type { SettlerStatus } from '../../protocol/settlement';
import { OpaqueIds } from '../../protocol/opaque-ids';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

forEachStore(t, (t, kind) => {
  t.test('a fresh install: database ready, pool not funded, settler idle', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      env: { SVC_CACHE_STATUS_TTL_S: '1', SVC_SETTLER_CADENCE_MS: '3600000' },
    });
    const res = await get(control, control.urls.api, '/api/v1/status');
    t.equal(res.status, 200);
    t.match(res.body, {
      status: 'degraded',
      version: 'v1',
      bootstrap: {
        database: { ready: true },
        pool: { funded: false, balance: 0 },
        endpoints: { registered: 0 },
        gateways: { connected: 0, known: 0, list: [] },
      },
      settler: { state: 'idle', cadence_ms: 3_600_000, batch_cap: 1000, backlog: 0, last_batch: null },
      beta_gate: { enabled: false },
      maintenance: { enabled: false, note: null },
      changelog: [],
    });
    t.equal(res.body.bootstrap.database.schema_version, res.body.bootstrap.database.schema_expected);

    const html = await get(control, control.urls.api, '/status', { 'user-agent': CHROME_UA });
    t.equal(html.status, 200);
    t.match(html.headers.get('content-type'), /^text\/html; charset=utf-8/);
    t.match(html.text, /^<!doctype html>\n<html lang="en">/);
    t.match(html.text, /<dt>Coverage pool<\/dt><dd>not funded<\/dd>/);
    t.match(html.text, /<dt>State<\/dt><dd>idle \(waiting for its next run\)<\/dd>/);
    t.match(html.text, /<dt>Cadence<\/dt><dd>every 3600 s, up to 1000 calls per batch<\/dd>/);
    t.match(html.text, /No gateway has connected yet\./);
    const csp = html.headers.get('content-security-policy')!;
    t.match(csp, /default-src 'none'/, 'CSP: nothing loads by default');
    const nonce = /style-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    t.ok(nonce, 'only the inline style, by the nonce of this response');
    t.equal([...html.text.matchAll(/nonce="([^"]+)"/g)].map((m) => m[1]).join(), nonce, 'which is on the one style element');
    t.notMatch(
      html.text,
      /<script|<link(?! rel="alternate" type="application\/atom\+xml")|<img|src=|@import|url\(/i,
      'no script and no external asset (feed links only)',
    );
    t.equal(html.headers.get('x-content-type-options'), 'nosniff');

    // A control without a settler in its process says so.
    control.handle.ctx.settler = () => null;
    clock.advance(1_000);
    const none = await get(control, control.urls.api, '/api/v1/status');
    t.match(none.body.settler, { state: 'not_running', cadence_ms: null, batch_cap: null, backlog: 0, last_batch: null });
    const noneHtml = await get(control, control.urls.api, '/status', { 'user-agent': CHROME_UA });
    t.match(noneHtml.text, /<dt>State<\/dt><dd>not running<\/dd>/);
    t.match(noneHtml.text, /<dt>Cadence<\/dt><dd>not scheduled<\/dd>/);
  });

  t.test('settler, gateways, pool, gate and maintenance as the operators set them', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      env: { SVC_CACHE_STATUS_TTL_S: '1', SVC_PUBLIC_STATUS_CHANGELOG_ENTRIES: '3' },
    });
    await addEndpoint(control, 'weather');
    await addEndpoint(control, 'search');
    const ctx = control.handle.ctx;
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 25_000_000 })).status, 201, 'svcctl pool fund');
    const settler: SettlerStatus = {
      state: 'paused',
      halted: null,
      leader: null,
      cadence_ms: 5000,
      batch_cap: 1000,
      backlog: 42,
      lag_ms: 7000,
      last_run_at: new Date(NOW - 3000).toISOString(),
      last_batch: {
        id: 9,
        endpoint_id: 'weather',
        calls: 12,
        refunds: 2_100_000,
        premiums: 1_200_000,
        at: new Date(NOW - 3000).toISOString(),
      },
      last_error: null,
    };
    ctx.settler = async () => settler;
    // Versions as control holds them when the status is read.
    ctx.gateways = async () => {
      const version = await ctx.store.version();
      return [
        {
          id: 'gw-host-a',
          connected: true,
          live: true,
          weight: 1,
          share: null,
          applied_version: version,
          last_seen: new Date(NOW - 2000).toISOString(),
          last_nack: null,
          engine: 'undici',
          control_id: 'ctl_test',
          gateway: null,
        },
        {
          id: 'gw-host-b',
          connected: false,
          live: false,
          weight: 1,
          share: null,
          applied_version: version - 2,
          last_seen: new Date(NOW - 60_000).toISOString(),
          last_nack: null,
          engine: null,
          control_id: null,
          gateway: null,
        },
      ];
    };

    const cli = (...args: string[]) => runCli(args, { control });
    t.equal((await cli('flag', 'set', 'beta_gate_enabled', 'on', '--note', 'private beta opens')).code, 0);
    t.equal((await cli('changelog', 'add', 'Rate caps raised <for> "everyone" & more')).code, 0);
    const set = await cli('flag', 'set', 'maintenance_mode', 'on', '--note', 'shipping a fix <b>now</b>');
    t.equal(set.code, 0, set.stderr);

    const res = await get(control, control.urls.api, '/api/v1/status');
    const ids = new OpaqueIds(ctx.store.idSecret);
    t.match(res.body, {
      status: 'maintenance',
      bootstrap: {
        pool: { funded: true, balance: 25_000_000 },
        endpoints: { registered: 2 },
        gateways: {
          connected: 1,
          known: 2,
          list: [
            { id: ids.gateway('gw-host-a'), connected: true, versions_behind: 0, seen_ago_s: 2 },
            { id: ids.gateway('gw-host-b'), connected: false, versions_behind: 2, seen_ago_s: 60 },
          ],
        },
      },
      settler: {
        state: 'paused',
        cadence_ms: 5000,
        backlog: 42,
        lag_ms: 7000,
        last_batch: { id: 9, provider: ids.provider('weather'), calls: 12 },
      },
      beta_gate: { enabled: true },
      maintenance: { enabled: true, note: 'shipping a fix <b>now</b>', since: new Date(NOW).toISOString() },
    });
    t.same(
      res.body.changelog.map((e: { text: string }) => e.text),
      [
        'maintenance_mode turned on: shipping a fix <b>now</b>',
        'Rate caps raised <for> "everyone" & more',
        'beta_gate_enabled turned on: private beta opens',
      ],
      'latest entries, newest first, public.statusChangelogEntries of them',
    );
    t.notMatch(res.text, /gw-host|weather|"author"|"admin"|"root"/, 'no gateway host names, endpoint ids or operator names');

    const html = (await get(control, control.urls.api, '/status', { 'user-agent': CHROME_UA })).text;
    t.match(html, /Overall: Under maintenance/);
    t.match(html, /<q id="maintenance-note">shipping a fix &lt;b&gt;now&lt;\/b&gt;<\/q>/, 'the note is shown, escaped');
    t.match(html, /Rate caps raised &lt;for&gt; &quot;everyone&quot; &amp; more/, 'changelog text is escaped');
    t.match(html, /<dt>State<\/dt><dd>paused by an operator<\/dd>/);
    t.match(html, /<dt>Backlog<\/dt><dd>42 calls waiting to be settled \(oldest 7 s old\)<\/dd>/);
    t.match(html, /<dt>Coverage pool<\/dt><dd>funded \(25\)<\/dd>/);
    t.match(html, /<dt>Gateways connected<\/dt><dd>1 of 2 known<\/dd>/);
    t.match(html, /The beta gate is <strong>on<\/strong>/);
    t.notMatch(html, /<b>now/, 'no operator-written markup survives');

    // Maintenance off again: the page says so once the cached answer expires.
    t.equal((await cli('flag', 'set', 'maintenance_mode', 'off')).code, 0);
    clock.advance(1_000);
    const off = await get(control, control.urls.api, '/api/v1/status');
    t.match(off.body, { status: 'operational', maintenance: { enabled: false, note: null, since: null } });
    for (const state of ['running', 'idle'] as const) {
      settler.state = state;
      clock.advance(1_000);
      t.equal((await get(control, control.urls.api, '/api/v1/status')).body.settler.state, state, `settler ${state}`);
    }
  });

  t.test('/api/v1/changelog: newest first, limit, no operator names', async (t) => {
    const control = await startTestControl(t, { store: kind });
    for (let i = 1; i <= 4; i++) t.equal((await runCli(['changelog', 'add', `notice ${i}`], { control })).code, 0);
    const all = await get(control, control.urls.api, '/api/v1/changelog');
    t.equal(all.status, 200);
    t.same(
      all.body.entries.map((e: { text: string }) => e.text),
      ['notice 4', 'notice 3', 'notice 2', 'notice 1'],
    );
    t.same(Object.keys(all.body.entries[0]).sort(), ['at', 'id', 'kind', 'text']);
    const two = await get(control, control.urls.api, '/api/v1/changelog?limit=2');
    t.same(
      two.body.entries.map((e: { text: string }) => e.text),
      ['notice 4', 'notice 3'],
    );
    t.equal((await get(control, control.urls.api, '/api/v1/changelog?limit=201')).status, 400, 'limit is bounded');
  });
});
