/**
 * The status pages' history, on both stores, from outcomes with past timestamps sent through
 * the real sync endpoint: each provider's 90 UTC days (the failure rate per day rated by the
 * tier rules, UNRATED under `tiers.minCalls` calls, a gap without calls, nothing older than
 * 90 days), uptime over 30 and 90 days, the incident history (maintenance periods with their
 * notes and HIGH_RISK days, newest first) on `/status` and `/providers/<id>`, the operator
 * internals under a collapsed "Details", and the activity page's GET filter and call lookup.
 */
import t, { type Test } from 'tap';
import type { ChangelogEntry } from '../../protocol/admin';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { DAY_MS, maintenancePeriods, providersHistory } from '../../control/public/pages/history';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { CHROME_UA, addEndpoint, get, ingest, many, outcome } from '../fixtures/public';
import { forEachStore, type StoreKind } from '../fixtures/stores';

/** 2030-03-01 12:00 UTC: today is day 89 of the history, 2029-12-02 is day 0. */
const NOW = Date.UTC(2030, 2, 1, 12, 0, 0);
const TODAY = Date.UTC(2030, 2, 1);
const dayAt = (daysAgo: number, hour = 10): number => TODAY - daysAgo * DAY_MS + hour * 3_600_000;
const dayName = (daysAgo: number): string => new Date(TODAY - daysAgo * DAY_MS).toISOString().slice(0, 10);

/** `calls` calls of `endpoint` on the day `daysAgo` days back, `failed` of them server errors, plus upstream 4xx that count neither way. */
const day = (endpoint: string, daysAgo: number, calls: number, failed: number, clientErrors = 0) =>
  many(calls + clientErrors, (i) =>
    outcome({
      endpoint_id: endpoint,
      at: dayAt(daysAgo) + i * 1000,
      outcome: i < failed ? 'server_error' : i < calls ? 'ok' : 'client_error',
      status: i < failed ? 503 : i < calls ? 200 : 404,
    }),
  );

async function seeded(t: Test, kind: StoreKind) {
  const clock = manualClock(NOW - 40 * DAY_MS);
  const control = await startTestControl(t, {
    store: kind,
    now: clock.now,
    env: { SVC_CACHE_STATUS_TTL_S: '1', SVC_CACHE_PROVIDERS_TTL_S: '1' },
  });
  await addEndpoint(control, 'ep-history-a', { display_name: 'Alpha' });
  await addEndpoint(control, 'ep-history-b');
  // Maintenance 40 days ago for 90 minutes, with a note on and one off.
  await control.admin('PUT', '/_admin/v1/flags/maintenance_mode', { value: true, note: 'moving the <db>' });
  clock.advance(90 * 60_000);
  await control.admin('PUT', '/_admin/v1/flags/maintenance_mode', { value: false, note: 'all done' });
  clock.set(NOW);
  await ingest(control, [
    ...day('ep-history-a', 95, 50, 50), // older than 90 days: not shown
    ...day('ep-history-a', 60, 100, 0, 30), // RELIABLE, 30 upstream 4xx that count neither way
    ...day('ep-history-a', 20, 40, 4), // 10 %: HIGH_RISK
    ...day('ep-history-a', 3, 10, 5), // 10 calls: UNRATED
    ...day('ep-history-a', 0, 50, 1), // today: 2 %, ELEVATED
    ...day('ep-history-b', 1, 30, 30), // HIGH_RISK yesterday
  ]);
  return { control, clock, ids: new OpaqueIds(control.handle.ctx.store.idSecret) };
}

const page = (control: TestControl, base: string, path: string) => get(control, base, path, { 'user-agent': CHROME_UA });

forEachStore(t, (t, kind) => {
  t.test('90 daily bars, uptime and the incident history', async (t) => {
    const { control, ids } = await seeded(t, kind);
    const a = ids.provider('ep-history-a');
    const b = ids.provider('ep-history-b');
    const h = await providersHistory(control.handle.ctx.store, ids, control.handle.ctx.config.tiers, NOW);
    const alpha = h.providers.find((p) => p.id === a)!;
    t.equal(alpha.days.length, 90, '90 days');
    t.equal(alpha.days[0]!.start, TODAY - 89 * DAY_MS, 'oldest first, from UTC midnight 89 days ago');
    t.same(
      alpha.days.flatMap((d, i) => (d.tier === null ? [] : [[89 - i, d.calls, d.failures, d.tier]])),
      [
        [60, 100, 0, 'RELIABLE'],
        [20, 40, 4, 'HIGH_RISK'],
        [3, 10, 5, 'UNRATED'],
        [0, 50, 1, 'ELEVATED'],
      ],
      'a day per UTC day with calls, rated by the tier rules; fewer than 20 calls unrated; the 95-day-old calls are not there; 4xx count neither way',
    );
    t.equal(alpha.days[88]!.rate, null, 'a day without calls is a gap');
    t.equal(alpha.uptime30, 1 - 10 / 100, 'uptime over 30 days: 1 − 10 failed of 100 calls');
    t.equal(alpha.uptime90, 1 - 10 / 200, 'over 90 days: 1 − 10 failed of 200 calls');
    t.equal(h.providers.find((p) => p.id === b)!.uptime30, 0);

    t.same(
      h.incidents.map((i) => [i.kind, i.start.slice(0, 10), i.provider?.id ?? null]),
      [
        ['high_risk', dayName(1), b],
        ['high_risk', dayName(20), a],
        ['maintenance', new Date(NOW - 40 * DAY_MS).toISOString().slice(0, 10), null],
      ],
      'every HIGH_RISK day and every maintenance period, newest first',
    );
    const m = h.incidents[2]!;
    t.equal(m.duration_ms, 90 * 60_000, 'the period lasted 90 minutes');
    t.equal(m.note, 'moving the <db>; ended: all done', 'with the operators’ notes');

    // /status: the history on top, the internals under a collapsed "Details".
    const status = await page(control, control.urls.api, '/status');
    t.equal(status.status, 200);
    const html = status.text;
    t.ok(html.indexOf('id="provider-history"') < html.indexOf('id="details"'), 'the history comes before the details');
    t.match(
      html,
      /<details id="details"><summary>Details<\/summary>[\s\S]*id="bootstrap"[\s\S]*id="settler"[\s\S]*<\/details>/,
      'schema and snapshot versions under Details',
    );
    t.notMatch(html, /<details id="details" open/, 'collapsed');
    t.match(
      html,
      new RegExp(
        `data-provider="${a}"[\\s\\S]*?uptime <span class="uptime">90 %</span> \\(30 days\\), <span class="uptime">95 %</span> \\(90 days\\)`,
      ),
      'uptime over 30 and 90 days',
    );
    t.equal([...html.matchAll(/<rect class="day day-/g)].length, 5, 'a bar per day with calls, both providers');
    t.match(html, new RegExp(`<rect class="day day-UNRATED" data-day="${dayName(3)}"`), 'the 10-call day is unrated');
    const incidents = /<ol class="history" id="incidents">([\s\S]*?)<\/ol>/.exec(html)?.[1] ?? '';
    t.equal([...incidents.matchAll(/<li data-incident="(\w+)"/g)].map((x) => x[1]).join(), 'high_risk,high_risk,maintenance');
    t.match(incidents, /1 h 30 min/, 'with its duration');
    t.match(incidents, /Note from the operators: <q>moving the &lt;db&gt;; ended: all done<\/q>/, 'and the note, escaped');

    // /providers/<id>: the 90-day bars with uptime, and the days as a table.
    const one = await page(control, control.urls.api, `/providers/${a}`);
    t.equal(one.status, 200);
    t.match(one.text, /<svg class="days" id="days"/);
    t.equal([...one.text.matchAll(/<rect class="day day-/g)].length, 4, 'four days with calls');
    t.match(one.text, new RegExp(`data-day="${dayName(20)}"[^>]*><title>${dayName(20)}: 10 % failed of 40 calls \\(HIGH_RISK\\)`));
    t.match(
      one.text,
      /id="uptime">Uptime <strong class="uptime">90 %<\/strong> over 30 days, <strong class="uptime">95 %<\/strong> over 90 days/,
    );
    t.match(
      one.text,
      /id="calls-line">50 rated calls; not counted: 0 upstream 4xx answers and 0 calls broken by the caller/,
      'the calls line reads as a sentence',
    );
    t.match(
      one.text,
      /<span class="spark-box"><svg class="spark"[\s\S]*?<\/svg><span class="spark-now">latest 2 %<\/span>/,
      'a single hour: its value as text beside the dot',
    );
    const quiet = await page(control, control.urls.api, `/providers/${b}`);
    t.match(
      quiet.text,
      /<span class="spark-none">no calls in the last 24 h<\/span>/,
      'no calls in the window: said in words, not an empty frame',
    );
    t.notMatch(quiet.text, /<svg class="spark"/);
  });

  t.test('activity: a GET filter by provider and outcome, and one call looked up by id', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      env: { SVC_SETTLER_CADENCE_MS: '3600000', SVC_CACHE_STATS_TTL_S: '1' },
    });
    await addEndpoint(control, 'ep-filter-a', { price: 20_000, premium: 1_000 });
    await addEndpoint(control, 'ep-filter-b', { price: 20_000, premium: 1_000 });
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const key = await control.admin('POST', '/_admin/v1/keys', { name: 'filter agent' });
    t.equal(key.status, 201);
    const records = [...day('ep-filter-a', 0, 6, 2), ...day('ep-filter-b', 0, 5, 3)].map((r) => ({
      ...r,
      key_id: key.body.id as string,
      started_at: new Date(NOW - 3_600_000 + Math.random() * 1e6).toISOString(),
    }));
    await ingest(control, records);
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 500_000_000 })).status, 201);
    t.equal((await control.admin('POST', '/_admin/v1/settler/run-once', {})).status, 200);
    const a = ids.provider('ep-filter-a');

    const filtered = await page(control, control.urls.indexer, `/activity?provider=${a}&outcome=server_error&call=`);
    t.equal(filtered.status, 200);
    const rows = [...filtered.text.matchAll(/<tr data-call="[^"]+"[^>]*>[\s\S]*?<\/tr>/g)].map((m) => m[0]);
    const calls = rows.filter((r) => !r.includes('recent-refunds'));
    const table = /<table class="cards oneline" id="calls">([\s\S]*?)<\/table>/.exec(filtered.text)?.[1] ?? '';
    t.equal([...table.matchAll(/<tr data-call=/g)].length, 2, 'only the two server errors of provider a');
    t.ok(calls.length > 0);
    t.notMatch(table, /ok <span/, 'no ok call');
    t.match(table, /2 calls matching the filter/);
    t.match(filtered.text, new RegExp(`<option value="${a}" selected>`), 'the form keeps the provider');
    t.match(filtered.text, /<option value="server_error" selected>/, 'and the outcome');
    t.match(filtered.text, /<form method="get" action="\/activity"/, 'a GET form');
    t.match(table, /<td class="num" data-label="Refund">0\.021<\/td>/, 'amounts without padding zeros');
    t.notMatch(filtered.text, /\d\.\d*0</, 'no amount ends in a padding zero');

    const bad = await page(control, control.urls.indexer, '/activity?outcome=exploded');
    t.equal(bad.status, 400);
    t.equal(bad.body.code, 'svc_bad_request');
    t.same(
      bad.body.errors.map((e: { field: string }) => e.field),
      ['outcome'],
    );

    const failed = records.find((r) => r.endpoint_id === 'ep-filter-b' && r.outcome === 'server_error')!;
    const lookup = await page(control, control.urls.indexer, `/activity?provider=&outcome=&call=${failed.call_id}`);
    t.equal(lookup.status, 200);
    const dl = /<dl id="lookup">([\s\S]*?)<\/dl>/.exec(lookup.text)?.[1] ?? '';
    t.match(dl, /<dt>Outcome<\/dt><dd>server error \(503, 40 ms\)/, 'its outcome');
    t.match(dl, /<dt>Refund<\/dt><dd>0\.021 units/, 'its refund');
    t.match(dl, /<dt>Batch<\/dt><dd><a href="\/api\/receipts\/\d+"/, 'its batch');
    t.match(dl, new RegExp(`<a href="/api/calls/${failed.call_id}/proof" id="proof-link">`), 'a link to its proof');
    const proof = await get(control, control.urls.indexer, `/api/calls/${failed.call_id}/proof`);
    t.equal(proof.status, 200, 'which answers');

    const none = await page(control, control.urls.indexer, '/activity?call=no-such-call');
    t.match(none.text, /<p id="lookup-none">No call with id <code>no-such-call<\/code> is recorded\.<\/p>/);
  });
});

t.test('maintenance periods from the flag’s changes', async (t) => {
  const at = (min: number) => new Date(Date.UTC(2030, 0, 1) + min * 60_000).toISOString();
  const change = (id: number, min: number, value: boolean, note = ''): ChangelogEntry => ({
    id,
    at: at(min),
    kind: 'flag',
    flag: 'maintenance_mode',
    value,
    author: 'op',
    text: `maintenance_mode turned ${value ? 'on' : 'off'}${note ? `: ${note}` : ''}`,
  });
  const newestFirst = [
    change(5, 300, true, 'again'),
    change(4, 200, false),
    change(3, 150, true, 'edited note'),
    change(2, 100, true, 'first'),
    change(1, 50, false),
  ];
  const periods = maintenancePeriods(newestFirst, Date.parse(at(330)));
  t.same(
    periods.map((p) => [p.start, p.end, p.duration_ms / 60_000, p.note]),
    [
      [at(100), at(200), 100, 'first; edited note'],
      [at(300), null, 30, 'again'],
    ],
    'an off before any on opens nothing; a second on while on stays in its period; an open period lasts until now',
  );
});
