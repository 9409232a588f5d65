/**
 * The agent's own account on {api_url}, read with its beta key: `/api/v1/account` (limit, calls
 * by outcome, refunds and premiums settled and pending over a window) and
 * `/api/v1/account/calls` (its calls newest first, by sealed cursor), on both stores.
 *
 * Covers: the figures before and after the real settler runs (pending is the price + premium
 * estimate, settled is ledger money); windows (24h default, 7d, 30d, anything else 400); one key
 * never sees another's calls, and a cached answer is never served to another key; key misuse
 * (missing, malformed, unknown, revoked, expired → 401, the key never echoed); the User-Agent
 * filter first and the per-IP limit; the limit in force (default, the key's own, a lift).
 */
import t from 'tap';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { addEndpoint, get, ingest, many, outcome } from '../fixtures/public';
import { forEachStore } from '../fixtures/stores';
import { OpaqueIds } from '../../protocol/opaque-ids';

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const MANUAL_SETTLER = { SVC_SETTLER_CADENCE_MS: '3600000' };
const PRICE = 2_000_000;
const PREMIUM = 100_000;

interface Issued {
  id: string;
  key: string;
  /** The key's own account: its balance is the account answer's. */
  account_id: string;
}

async function issue(control: TestControl, body: Record<string, unknown> = {}): Promise<Issued> {
  const res = await control.admin('POST', '/_admin/v1/keys', body);
  if (res.status !== 201) throw new Error(`issue answered ${res.status}: ${res.text}`);
  return { id: res.body.id, key: res.body.key, account_id: res.body.account_id };
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

forEachStore(t, (t, kind) => {
  t.test('the account of a key: figures before and after settlement, windows, calls page by page', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, { store: kind, now: clock.now, env: { ...MANUAL_SETTLER, SVC_CACHE_STATS_TTL_S: '5' } });
    await addEndpoint(control, 'weather', { price: PRICE, premium: PREMIUM, treasury_fee_bps: 0, refund_cap_per_hour: 0 });
    t.equal((await control.admin('PATCH', '/_admin/v1/endpoints/weather', { display_name: 'Weather' })).status, 200);
    const a = await issue(control, { name: 'agent-a', limit: { count: 10, window_seconds: 60 } });
    const b = await issue(control, { name: 'agent-b' });
    const aCalls = [
      ...many(3, (i) => outcome({ endpoint_id: 'weather', key_id: a.id, at: NOW - HOUR + i })),
      ...many(2, (i) => outcome({ endpoint_id: 'weather', key_id: a.id, at: NOW - HOUR + 10 + i, outcome: 'server_error', status: 500 })),
      outcome({ endpoint_id: 'weather', key_id: a.id, at: NOW - HOUR + 20, outcome: 'client_error', status: 404 }),
      // Two days ago: in the 7d and 30d windows, not in 24h.
      outcome({ endpoint_id: 'weather', key_id: a.id, at: NOW - 2 * DAY, outcome: 'latency_breach', status: 200 }),
    ];
    const bCalls = many(2, (i) => outcome({ endpoint_id: 'weather', key_id: b.id, at: NOW - 30 * 60_000 + i }));
    const keyless = outcome({ endpoint_id: 'weather', at: NOW - 60_000 });
    await ingest(control, [...aCalls, ...bCalls, keyless]);

    const before = await get(control, control.urls.api, '/api/v1/account', bearer(a.key));
    t.equal(before.status, 200, before.text);
    t.same(before.body, {
      key_id: a.id,
      name: 'agent-a',
      status: 'active',
      limits: { count: 10, window_seconds: 60, burst: before.body.limits.burst, source: 'key', until: null },
      window: { from: new Date(NOW - DAY).toISOString(), to: new Date(NOW).toISOString() },
      calls: 6,
      outcomes: {
        ok: 3,
        latency_breach: 0,
        server_error: 2,
        network_error: 0,
        schema_mismatch: 0,
        client_error: 1,
        caller_error: 0,
      },
      refunds: { settled: 0, pending: 2 * (PRICE + PREMIUM) },
      premiums: { settled: 0, pending: 3 * PREMIUM },
      unsettled_calls: 6,
      last_call_at: new Date(NOW - HOUR + 20).toISOString(),
      balance: { account_id: a.account_id, available: 0, reserved: 0, low: false },
    });
    t.ok(before.body.limits.burst >= 1, 'a burst');
    t.match(before.headers.get('cache-control'), /^private, max-age=[0-5]$/, 'private, cached no longer than the public reads');
    t.equal(before.headers.get('vary'), 'Authorization');
    t.equal(before.headers.get('access-control-allow-origin'), null, 'not readable by any web page');

    const week = await get(control, control.urls.api, '/api/v1/account?window=7d', bearer(a.key));
    t.equal(week.status, 200);
    t.equal(week.body.calls, 7, 'the 7d window holds the call of two days ago');
    t.equal(week.body.outcomes.latency_breach, 1);
    t.equal(week.body.refunds.pending, 3 * (PRICE + PREMIUM));
    t.equal(week.body.window.from, new Date(NOW - 7 * DAY).toISOString());
    const month = await get(control, control.urls.api, '/api/v1/account?window=30d', bearer(a.key));
    t.equal(month.body.calls, 7);
    t.equal(month.body.window.from, new Date(NOW - 30 * DAY).toISOString());

    // B asks right after A, within the TTL: its own answer, never A's cached one.
    const other = await get(control, control.urls.api, '/api/v1/account', bearer(b.key));
    t.equal(other.body.key_id, b.id, "the cache is not shared between keys: B gets B's account");
    t.equal(other.body.calls, 2);
    t.equal(other.body.limits.source, 'default');
    t.not(other.headers.get('etag'), before.headers.get('etag'));
    const bPage = await get(control, control.urls.api, '/api/v1/account/calls', bearer(b.key));
    t.same(
      bPage.body.calls.map((c: { call_id: string }) => c.call_id).sort(),
      bCalls.map((c) => c.call_id).sort(),
      "B's calls and only B's",
    );

    // Settle everything with the real settler.
    t.equal((await control.admin('POST', '/_admin/v1/pool/fund', { amount: 50_000_000 })).status, 201);
    clock.advance(1_000);
    const run = await control.admin('POST', '/_admin/v1/settler/run-once', {});
    t.equal(run.status, 200, run.text);
    clock.advance(10_000); // past the cache TTL
    const after = await get(control, control.urls.api, '/api/v1/account', bearer(a.key));
    t.match(after.body, {
      calls: 6,
      refunds: { settled: 2 * (PRICE + PREMIUM), pending: 0 },
      premiums: { settled: 3 * PREMIUM, pending: 0 },
      unsettled_calls: 0,
      // The balance is of all time: the latency breach of two days ago was refunded too.
      balance: { account_id: a.account_id, available: 3 * (PRICE + PREMIUM) - 3 * PREMIUM, reserved: 0, low: false },
    });
    // Under the account's threshold, the balance says so.
    const low = await control.admin('PATCH', `/_admin/v1/accounts/${a.account_id}`, { low: 3 * (PRICE + PREMIUM) });
    t.equal(low.status, 200, low.text);
    clock.advance(10_000);
    const lowNow = await get(control, control.urls.api, '/api/v1/account', bearer(a.key));
    t.match(lowNow.body.balance, { available: 3 * PRICE, low: true }, 'low under the threshold');
    const weekAfter = await get(control, control.urls.api, '/api/v1/account?window=7d', bearer(a.key));
    t.equal(weekAfter.body.refunds.settled, 3 * (PRICE + PREMIUM), 'the latency breach of two days ago was refunded too');

    // Calls, newest first, two a page.
    const ids = new OpaqueIds(control.handle.ctx.store.idSecret);
    const seen: { call_id: string; started_at: string }[] = [];
    let path = '/api/v1/account/calls?limit=2';
    let first: Record<string, unknown> | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await get(control, control.urls.api, path, bearer(a.key));
      t.equal(page.status, 200, page.text);
      t.ok(page.body.calls.length <= 2);
      first ??= page.body.calls[0];
      seen.push(...page.body.calls);
      if (page.body.next_before === null) break;
      path = `/api/v1/account/calls?limit=2&before=${encodeURIComponent(page.body.next_before)}`;
    }
    t.same(seen.map((c) => c.call_id).sort(), aCalls.map((c) => c.call_id).sort(), "every call of A, once, and nobody else's");
    const times = seen.map((c) => Date.parse(c.started_at));
    t.same(
      times,
      [...times].sort((x, y) => y - x),
      'newest first',
    );
    const newest = aCalls[5]!;
    t.same(first, {
      call_id: newest.call_id,
      provider: ids.provider('weather'),
      display_name: 'Weather',
      started_at: newest.started_at,
      outcome: 'client_error',
      status: 404,
      latency_ms: 40,
      refund: 0,
      premium: 0,
      settled_batch: first!.settled_batch,
    });
    t.ok(
      (run.body.batches as { id: number }[]).some((b) => b.id === first!.settled_batch),
      'settled: the batch the settler made',
    );

    const tooMany = await get(control, control.urls.api, '/api/v1/account/calls?limit=1001', bearer(a.key));
    t.equal(tooMany.status, 400);
    t.equal(tooMany.body.code, 'svc_bad_request');
    const badCursor = await get(control, control.urls.api, '/api/v1/account/calls?before=nope', bearer(a.key));
    t.equal(badCursor.status, 400);
  });

  t.test('unsettled calls carry no money; a lift is the limit in force while it lasts', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, { store: kind, now: clock.now, env: { ...MANUAL_SETTLER, SVC_CACHE_STATS_TTL_S: '1' } });
    await addEndpoint(control, 'weather', { price: PRICE, premium: PREMIUM });
    const a = await issue(control, { name: 'agent' });
    const fresh = await get(control, control.urls.api, '/api/v1/account', bearer(a.key));
    t.match(fresh.body, { calls: 0, unsettled_calls: 0, last_call_at: null, refunds: { settled: 0, pending: 0 } }, 'a key with no call');
    const call = outcome({ endpoint_id: 'weather', key_id: a.id, at: NOW - 1_000, outcome: 'network_error', status: 502 });
    await ingest(control, [call]);
    const lift = await control.admin('POST', `/_admin/v1/keys/${a.id}/lift`, {
      limit: { count: 500, window_seconds: 60 },
      for_seconds: 600,
    });
    t.equal(lift.status, 200, lift.text);
    clock.advance(2_000);
    const lifted = await get(control, control.urls.api, '/api/v1/account', bearer(a.key));
    t.match(lifted.body.limits, { count: 500, window_seconds: 60, source: 'lift', until: new Date(NOW + 600_000).toISOString() });
    const page = await get(control, control.urls.api, '/api/v1/account/calls', bearer(a.key));
    t.same(page.body, {
      calls: [
        {
          call_id: call.call_id,
          provider: new OpaqueIds(control.handle.ctx.store.idSecret).provider('weather'),
          display_name: null,
          started_at: call.started_at,
          outcome: 'network_error',
          status: 502,
          latency_ms: 40,
          refund: null,
          premium: null,
          settled_batch: null,
        },
      ],
      next_before: null,
    });
    clock.advance(601_000);
    const ended = await get(control, control.urls.api, '/api/v1/account', bearer(a.key));
    t.match(ended.body.limits, { source: 'default', until: null }, 'the lift ended');
  });

  t.test('key misuse is 401 svc_unauthorized; a bad window 400; the User-Agent filter comes first', async (t) => {
    const clock = manualClock(NOW);
    const control = await startTestControl(t, { store: kind, now: clock.now, env: { SVC_CACHE_STATS_TTL_S: '1' } });
    const live = await issue(control, { name: 'live' });
    const revoked = await issue(control, { name: 'revoked' });
    const expiring = await issue(control, { name: 'expiring', expires_in_seconds: 60 });
    // A cached answer must not outlive the key's revocation or expiry either.
    for (const k of [revoked, expiring]) t.equal((await get(control, control.urls.api, '/api/v1/account', bearer(k.key))).status, 200);
    t.equal((await control.admin('POST', `/_admin/v1/keys/${revoked.id}/revoke`, {})).status, 200);
    t.equal(
      (await get(control, control.urls.api, '/api/v1/account', bearer(revoked.key))).status,
      401,
      'revoked: not served from the cache',
    );
    clock.advance(61_000);
    const unknown = 'svc_beta_' + '1'.repeat(44);
    const cases: [string, Record<string, string>][] = [
      ['no Authorization', {}],
      ['not a bearer', { authorization: `Basic ${Buffer.from(`x:${live.key}`).toString('base64')}` }],
      ['malformed key', bearer('svc_beta_short')],
      ['unknown key', bearer(unknown)],
      ['revoked key', bearer(revoked.key)],
      ['expired key', bearer(expiring.key)],
    ];
    for (const [name, headers] of cases) {
      for (const path of ['/api/v1/account', '/api/v1/account/calls']) {
        const res = await get(control, control.urls.api, path, headers);
        t.equal(res.status, 401, `${name}: ${path} is 401`);
        t.equal(res.body.code, 'svc_unauthorized', name);
        t.match(res.headers.get('content-type'), /^application\/problem\+json/);
        t.equal(res.headers.get('www-authenticate'), 'Bearer realm="account"');
        for (const k of [live.key, revoked.key, expiring.key, unknown]) t.notOk(res.text.includes(k), `${name}: no key in the body`);
      }
    }
    t.equal((await get(control, control.urls.api, '/api/v1/account', bearer(live.key))).status, 200, 'the live key reads its account');

    const bad = await get(control, control.urls.api, '/api/v1/account?window=1y', bearer(live.key));
    t.equal(bad.status, 400);
    t.equal(bad.body.code, 'svc_bad_request');
    t.match(bad.body.detail, /24h, 7d or 30d/);
    const extra = await get(control, control.urls.api, '/api/v1/account?foo=1', bearer(live.key));
    t.equal(extra.status, 400, 'an unknown query parameter is refused');

    const curl = await get(control, control.urls.api, '/api/v1/account', { ...bearer(live.key), 'user-agent': 'curl/8.5.0' });
    t.equal(curl.status, 403, 'the User-Agent filter comes first, key or not');
    t.equal(curl.body.code, 'svc_forbidden_user_agent');
  });

  t.test('account reads count against the per-IP limit of the public reads', async (t) => {
    const control = await startTestControl(t, { store: kind, env: { SVC_LIMITS_PUBLIC_COUNT: '3', SVC_LIMITS_PUBLIC_WINDOW_S: '3600' } });
    const a = await issue(control, {});
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(control, control.urls.api, '/api/v1/account', bearer(a.key))).status);
    t.same(statuses, [200, 200, 200, 429]);
  });
});
