/**
 * The pieces of the public pages that are pure: the sparkline's points follow the hourly
 * failure rates (an hour without calls breaks the line), the hourly bars stack each outcome
 * at its height, the providers' order (UNRATED last in every order), the query that picks it,
 * the hourly rollup slots (they add up to the window), the XML escaping of the feeds, and the
 * gzip of a cached page around its per-answer nonce.
 */
import t from 'tap';
import { crc32, gunzipSync, gzipSync } from 'node:zlib';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { nextNonce } from '../../control/pages/respond';
import { acceptsGzip, applyShift, crc32Shift, gzipAnswer, gzipTemplate, shiftTable } from '../../control/pages/gzip';
import { BARS, SPARK, hourlyBars, sparkline, type SlotCounts } from '../../control/public/pages/svg';
import { parseSort, sortProviders } from '../../control/public/pages/board';
import { feedUuid, renderAtom, xmlText } from '../../control/pages/atom';
import type { SqliteStore } from '../../control/store';
import { REFUNDS_SQL } from '../../control/store/sql/public-reads';
import type { Provider, Tier } from '../../protocol/public';
import { startTestControl } from '../fixtures/control';
import { addEndpoint, ingest, outcome } from '../fixtures/public';

/** The points of a sparkline: [x, y] of each circle, and the path's move/line commands. */
function sparkPoints(svg: string): { circles: [number, number][]; path: string[] } {
  const circles = [...svg.matchAll(/<circle class="pt" cx="([\d.]+)" cy="([\d.]+)"/g)].map(
    (m) => [Number(m[1]), Number(m[2])] as [number, number],
  );
  const d = /<path class="line" d="([^"]*)"/.exec(svg)?.[1] ?? '';
  return { circles, path: d.match(/[ML][\d.]+ [\d.]+/g) ?? [] };
}

const yOf = (rate: number, scale: number) => SPARK.height - SPARK.pad - ((SPARK.height - 2 * SPARK.pad) * rate) / scale;
const xOf = (i: number, n: number) => SPARK.pad + ((SPARK.width - 2 * SPARK.pad) * i) / (n - 1);

t.test('sparkline: one point per hour with calls, at the height of its rate', async (t) => {
  const rates = [null, 0.1, 0.4, null, null, 0.25, 0];
  const svg = sparkline(rates, { floor: 0.1, limit: 0.05, windowH: 7 });
  const { circles, path } = sparkPoints(svg);
  t.equal(circles.length, 4, 'four hours with calls, four points');
  const expected = [
    [1, 0.1],
    [2, 0.4],
    [5, 0.25],
    [6, 0],
  ] as const;
  expected.forEach(([i, rate], k) => {
    t.ok(Math.abs(circles[k]![0] - xOf(i, 7)) < 0.01, `point ${k} sits at hour ${i}`);
    t.ok(Math.abs(circles[k]![1] - yOf(rate, 0.4)) < 0.01, `point ${k} is at rate ${rate} on a 0–40 % scale`);
  });
  t.same(
    path.map((c) => c[0]),
    ['M', 'L', 'M', 'L'],
    'the line breaks over the hours without calls',
  );
  t.ok(circles[1]![1] < circles[0]![1] && circles[2]![1] > circles[1]![1], 'higher rates are drawn higher');
  t.match(
    svg,
    /role="img" aria-label="Failure rate per hour over the last 7 h: highest 40 %, latest 0 %, 4 of 7 hours with calls"/,
    'a text alternative',
  );
  t.match(svg, /<line class="limit"[^>]*y1="([\d.]+)"/, 'the HIGH_RISK line is drawn');
  t.equal(Number(/<line class="limit"[^>]*y1="([\d.]+)"/.exec(svg)![1]), Math.round(yOf(0.05, 0.4) * 100) / 100, 'at 5 %');
  t.notMatch(svg, /style=/, 'no style attribute (the CSP allows none)');

  const low = sparkPoints(sparkline([0.002, 0.004], { floor: 0.1, limit: 0.05, windowH: 2 }));
  t.ok(Math.abs(low.circles[1]![1] - yOf(0.004, 0.1)) < 0.01, 'low rates use the floor of the scale, so 0.4 % stays near the bottom');

  const none = sparkline([null, null], { floor: 0.1, limit: 0.05, windowH: 2 });
  t.equal(sparkPoints(none).circles.length, 0, 'no calls: no points');
  t.notMatch(none, /class="line"/, 'and no line');
  t.match(none, /No calls in the last 2 h/);
});

t.test('hourly bars: one stacked bar per hour with calls, each outcome at its height', async (t) => {
  const hour = (ok: number, server = 0, latency = 0): SlotCounts => ({
    ok,
    latency_breach: latency,
    server_error: server,
    network_error: 0,
    schema_mismatch: 0,
  });
  const slots: SlotCounts[] = [null, hour(30, 10), null, hour(40, 0, 20)];
  const svg = hourlyBars(slots, ['h0', 'h1', 'h2', 'h3'], 4);
  const bars = [...svg.matchAll(/<g class="bar" data-slot="(\d+)" data-calls="(\d+)">(.*?)<\/g>/g)];
  t.same(
    bars.map((b) => Number(b[1])),
    [1, 3],
    'bars for the two hours with calls, in order',
  );
  const plotH = BARS.height - BARS.top - BARS.bottom;
  const rects = (g: string) =>
    [...g.matchAll(/<rect class="o-(\w+)" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"/g)].map((m) => ({
      outcome: m[1],
      y: Number(m[2]),
      h: Number(m[3]),
    }));
  const first = rects(bars[0]![3]!);
  t.same(
    first.map((r) => r.outcome),
    ['ok', 'server_error'],
    'ok at the bottom, then server errors',
  );
  t.ok(Math.abs(first[0]!.h - (plotH * 30) / 60) < 0.01, '30 of the busiest hour’s 60 calls: half the height');
  t.ok(Math.abs(first[1]!.h - (plotH * 10) / 60) < 0.01, '10 server errors');
  t.ok(Math.abs(first[1]!.y + first[1]!.h - first[0]!.y) < 0.02, 'stacked on top of the ok calls');
  const second = rects(bars[1]![3]!);
  t.same(
    second.map((r) => r.outcome),
    ['ok', 'latency_breach'],
  );
  t.ok(Math.abs(second[0]!.h + second[1]!.h - plotH) < 0.02, 'the busiest hour fills the plot');
  t.match(bars[1]![3], /<title>h3: 60 calls \(40 ok, 20 latency breach\)<\/title>/, 'each bar says what it holds');
  t.match(svg, /<p class="axis axis-y"[^>]*>60 calls<\/p>/, 'the scale is labelled with the busiest hour, as HTML text');
  t.notMatch(svg, /<text/, 'no SVG text, which shrinks with the chart');
  t.notMatch(svg, /style=/);
  t.equal([...hourlyBars([null, null], ['a', 'b'], 2).matchAll(/class="bar"/g)].length, 0, 'no calls: no bars');
});

t.test('providers order: by tier or by failure rate, either way, UNRATED last', async (t) => {
  const p = (id: string, tier: Tier, failure_rate: number) => ({ id, tier, failure_rate }) as Provider;
  const list = [
    p('prv_u', 'UNRATED', 0),
    p('prv_h', 'HIGH_RISK', 0.2),
    p('prv_r', 'RELIABLE', 0.005),
    p('prv_e', 'ELEVATED', 0.03),
    p('prv_r2', 'RELIABLE', 0.001),
  ];
  const ids = (sort: Parameters<typeof sortProviders>[1]) => sortProviders(list, sort).map((x) => x.id);
  t.same(ids({ key: 'tier', order: 'asc' }), ['prv_r2', 'prv_r', 'prv_e', 'prv_h', 'prv_u'], 'tier, best first (rate breaks ties)');
  t.same(ids({ key: 'tier', order: 'desc' }), ['prv_h', 'prv_e', 'prv_r', 'prv_r2', 'prv_u'], 'tier, worst first; UNRATED still last');
  t.same(
    ids({ key: 'failure_rate', order: 'asc' }),
    ['prv_r2', 'prv_r', 'prv_e', 'prv_h', 'prv_u'],
    'rate, lowest first; UNRATED (rate 0) last',
  );
  t.same(ids({ key: 'failure_rate', order: 'desc' }), ['prv_h', 'prv_e', 'prv_r', 'prv_r2', 'prv_u'], 'rate, highest first');

  t.same(parseSort(new URLSearchParams('')), { key: 'tier', order: 'asc' }, 'default: tier, best first');
  t.same(parseSort(new URLSearchParams('sort=failure_rate&order=desc')), { key: 'failure_rate', order: 'desc' });
  t.throws(() => parseSort(new URLSearchParams('sort=upstream')), { code: 'svc_bad_request' }, 'an unknown key is refused');
  t.throws(() => parseSort(new URLSearchParams('order=sideways')), { code: 'svc_bad_request' }, 'an unknown order is refused');
});

t.test('hourly slots of the rollups add up to the window', async (t) => {
  const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);
  const control = await startTestControl(t, { now: () => NOW });
  await addEndpoint(control, 'slots');
  const HOUR = 3_600_000;
  await ingest(control, [
    outcome({ endpoint_id: 'slots', at: NOW - 24 * HOUR - 1 }), // before the window
    outcome({ endpoint_id: 'slots', at: NOW - 24 * HOUR }), // its first minute: slot 0
    outcome({ endpoint_id: 'slots', at: NOW - 23 * HOUR - 1, outcome: 'server_error', status: 500 }), // still slot 0
    outcome({ endpoint_id: 'slots', at: NOW - 23 * HOUR }), // slot 1
    outcome({ endpoint_id: 'slots', at: NOW - 1 }), // slot 23
    outcome({ endpoint_id: 'slots', at: NOW }), // the minute that starts now: the last slot too
  ]);
  const store = control.handle.ctx.store;
  const slots = await store.rollups.slots(NOW - 24 * HOUR, 60, 24);
  const bySlot = new Map(slots.map((s) => [s.slot, s.counts]));
  t.same(
    [...bySlot.keys()].sort((a, b) => a - b),
    [0, 1, 23],
    'three slots with calls; whole numbers',
  );
  t.equal(bySlot.get(0)!.ok + bySlot.get(0)!.server_error, 2, 'slot 0: the first hour of the window');
  t.equal(bySlot.get(0)!.server_error, 1);
  t.equal(bySlot.get(23)!.ok, 2, 'the last slot holds the last hour and the minute now');
  const total = slots.reduce((n, s) => n + s.counts.ok + s.counts.server_error, 0);
  const window = (await store.rollups.window(NOW - 24 * HOUR))[0]!;
  t.equal(total, window.counts.ok + window.counts.server_error, 'the slots add up to the window');
});

t.test('feeds: XML escaping, characters XML cannot hold, stable ids', async (t) => {
  t.equal(xmlText(`a<b>&"c"'d`), 'a&lt;b&gt;&amp;&quot;c&quot;&apos;d');
  t.equal(xmlText('bell\u0007 and \ud800 lone'), 'bell\ufffd and \ufffd lone', 'control characters and lone surrogates become U+FFFD');
  t.equal(xmlText('emoji 😀 stays'), 'emoji 😀 stays', 'a surrogate pair is kept');
  const secret = Buffer.alloc(32, 7);
  t.equal(feedUuid(secret, 'changelog:1'), feedUuid(Buffer.alloc(32, 7), 'changelog:1'), 'the same name, the same id');
  t.not(feedUuid(secret, 'changelog:1'), feedUuid(secret, 'changelog:2'));
  t.not(feedUuid(secret, 'changelog:1'), feedUuid(Buffer.alloc(32, 8), 'changelog:1'), 'another install, another id');
  t.match(
    feedUuid(secret, 'x'),
    /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    'an RFC 9562 version-8 UUID',
  );
  const xml = renderAtom({
    id: 'urn:uuid:x',
    title: 'T & <t>',
    subtitle: 's',
    updated: '2030-01-01T00:00:00.000Z',
    self: '/f.atom',
    alternate: '/',
    entries: [{ id: 'urn:uuid:y', title: '<script>alert(1)</script>', updated: '2030-01-01T00:00:00.000Z', content: 'a\u0000b ]]> c' }],
  });
  t.equal(XMLValidator.validate(xml), true, 'well-formed XML');
  const parsed = new XMLParser({ ignoreAttributes: false }).parse(xml);
  t.equal(parsed.feed.title['#text'], 'T & <t>', 'text survives the round trip');
  t.equal(parsed.feed.entry.title['#text'], '<script>alert(1)</script>', 'markup in a title stays text');
  t.equal(parsed.feed.entry.content['#text'], 'a\ufffdb ]]> c');
});

t.test('gzip around a slot: any slot bytes give a valid gzip of the whole page', async (t) => {
  const a = Buffer.from('the first part of a page, '.repeat(40));
  const b = Buffer.from('and the rest of it. '.repeat(300));
  const combine = (crcA: number, tail: Buffer): number => (applyShift(shiftTable(crc32Shift(tail.length)), crcA) ^ crc32(tail)) >>> 0;
  t.equal(combine(crc32(a), b), crc32(Buffer.concat([a, b])), 'CRC-32 of a‖b combined from the parts');
  t.equal(combine(crc32(a), Buffer.alloc(0)), crc32(a), 'an empty tail changes nothing');
  for (const n of [1, 7, 4096, 123457]) {
    const tail = Buffer.alloc(n, 'z');
    for (const head of [Buffer.alloc(0), Buffer.from('x'), a])
      t.equal(
        combine(crc32(head), tail),
        crc32(Buffer.concat([head, tail])),
        `the byte tables append ${n} bytes to a ${head.length}-byte CRC`,
      );
  }
  const page = Buffer.concat([a, Buffer.from('XXXXXXXXXXXXXXXXXXXXXXXX'), b]);
  const tpl = gzipTemplate(page, a.length, 24);
  t.ok(tpl.length < gzipSync(page).length + 64, `about as small as gzip of the whole (${tpl.length} vs ${gzipSync(page).length})`);
  for (const slot of ['AAAAAAAAAAAAAAAAAAAAAAAA', 'q0+/Zz9=w1e2r3t4y5u6i7o8', '\u00ff'.repeat(24)]) {
    const s = Buffer.from(slot, 'latin1');
    const bytes = gzipAnswer(tpl, slot);
    t.equal(bytes.length, tpl.length, 'the announced length');
    t.same(
      gunzipSync(bytes),
      Buffer.concat([a, s, b]),
      `slot ${JSON.stringify(slot.slice(0, 6))}…: decompresses (CRC and size checked) to the page with it`,
    );
  }
  t.throws(() => gzipAnswer(tpl, 'short'), RangeError, "a slot shorter than the template's is refused");
  t.throws(() => gzipAnswer(tpl, 'L'.repeat(25)), RangeError, "a slot longer than the template's is refused");
  const wrong = gzipAnswer(tpl, 'A'.repeat(24));
  wrong.set(Buffer.alloc(24, 66), tpl.head.length);
  t.throws(() => gunzipSync(wrong), 'a trailer for other slot bytes fails the CRC check');
  for (const [header, ok] of [
    [undefined, false],
    ['gzip', true],
    ['br, gzip;q=0.2', true],
    ['GZIP', true],
    ['x-gzip', true],
    ['gzip;q=0', false],
    ['gzip; q=0.0', false],
    ['br, deflate', false],
    ['identity', false],
    ['gzip, deflate, br', true],
    ['gzip, deflate, br, zstd', true],
    ['deflate,gzip', true],
    ['gzipx, br', false],
    ['deflate, gzip;q=0, br', false],
    ['deflate, gzip ;q=0', false],
    ['br;q=1, gzip', true],
  ] as const)
    t.equal(acceptsGzip(header), ok, `Accept-Encoding ${JSON.stringify(header)}: ${ok ? 'gzip' : 'no gzip'}`);
});

t.test('nonces: 16 random bytes each, never the same twice, across refills of the pool', async (t) => {
  const seen = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    const n = nextNonce();
    if (i % 250 === 0) t.equal(Buffer.from(n, 'base64').length, 16, `nonce ${i}: 16 bytes`);
    seen.add(n);
  }
  t.equal(seen.size, 1000, '1000 nonces (about four pools), all different');
});

t.test('the last refunds read the partial indexes of migration 19, not every call', async (t) => {
  const control = await startTestControl(t);
  const db = (control.handle.ctx.store as SqliteStore).db;
  const plan = (sql: string, ...args: unknown[]) =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((r) => r.detail).join('; ');
  const all = plan(REFUNDS_SQL(false), 20);
  t.match(all, /USING INDEX settled_calls_refunded\b/, 'all providers: settled_calls_refunded');
  t.notMatch(all, /TEMP B-TREE/, 'in index order, no sort');
  const one = plan(REFUNDS_SQL(true), 'x', 20);
  t.match(one, /USING INDEX settled_calls_refunded_by_endpoint \(endpoint_id=\?\)/, 'one provider: settled_calls_refunded_by_endpoint');
  t.notMatch(one, /TEMP B-TREE/);
  const columnsOf = (db.prepare(`PRAGMA table_info(endpoints)`).all() as { name: string }[]).map((c) => c.name);
  t.ok(columnsOf.includes('display_name'), 'endpoints.display_name exists');
});
