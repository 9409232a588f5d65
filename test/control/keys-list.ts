/**
 * `GET /_admin/v1/keys` pages: newest first, `limit` (default 100, at most 1000), an opaque
 * `next_cursor` (null at the end) over an index, `status` filtered by control; bad parameters
 * are 400 `svc_bad_request` naming the parameter. `svcctl keys list` follows the cursor.
 */
import t, { type Test } from 'tap';
import { Client } from 'pg';
import { generateKey, hashKey, keyStub, newId } from '../../protocol/keys';
import type { SqliteStore, Store } from '../../control/store/index';
import { runCli } from '../fixtures/cli';
import { manualClock, startTestControl, type AdminResponse, type TestControl } from '../fixtures/control';
import { forEachStore, openTestStore, testDatabaseUrl, type StoreKind } from '../fixtures/stores';

const DAY = 86_400_000;

/** Insert `n` keys straight into the store (one transaction), `created_at` from `from` onwards (several per ms). */
async function insertKeys(
  store: Store,
  n: number,
  from: number,
  opts: { perMs?: number; expiresAt?: number | null } = {},
): Promise<string[]> {
  const ids: string[] = [];
  const perMs = opts.perMs ?? 3;
  await store.mutate({ actor: 'test', now: from }, { action: 'test.insert_keys' }, async (tx) => {
    for (let i = 0; i < n; i++) {
      const key = generateKey();
      const id = newId('key');
      await tx.keys.insert({
        id,
        name: `k${i}`,
        prefix: keyStub(key),
        hash: hashKey(key),
        created_at: from + Math.floor(i / perMs),
        created_by: 'test',
        expires_at: opts.expiresAt ?? null,
        wallet: null,
        endpoints: [],
        limit: null,
        application_id: null,
      });
      ids.push(id);
    }
  });
  return ids;
}

/** Follow `next_cursor` from the first page (or from `start`); returns every page. */
async function allPages(
  control: TestControl,
  query: string,
  start: string | null = null,
): Promise<{ keys: { id: string; status: string; created_at: string }[]; next_cursor: string | null }[]> {
  const pages = [];
  let cursor: string | null = start;
  for (let guard = 0; guard < 10_000; guard++) {
    const res: AdminResponse = await control.admin(
      'GET',
      `/_admin/v1/keys?${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
    );
    if (res.status !== 200) throw new Error(`page ${guard}: ${res.status} ${res.text}`);
    pages.push(res.body);
    cursor = res.body.next_cursor;
    if (cursor === null) return pages;
  }
  throw new Error('next_cursor never became null');
}

t.test('pages newest first with an opaque next_cursor, null at the end', async (t) => {
  const clock = manualClock();
  const control = await startTestControl(t, { now: clock.now });
  const store = control.handle.ctx.store;
  const ids = await insertKeys(store, 250, clock.now() - DAY);

  const first = await control.admin('GET', '/_admin/v1/keys');
  t.equal(first.status, 200);
  t.equal(first.body.keys.length, 100, 'the default page is 100 keys');
  t.type(first.body.next_cursor, 'string', 'with a cursor to the next page');
  t.notMatch(first.body.next_cursor, /key_/, 'the cursor is opaque (no raw id)');

  const pages = await allPages(control, 'limit=100');
  t.same(
    pages.map((p) => p.keys.length),
    [100, 100, 50],
    'three pages of 100, 100, 50',
  );
  t.equal(pages[2]!.next_cursor, null, 'the last page says there is no more');
  const listed = pages.flatMap((p) => p.keys);
  t.equal(new Set(listed.map((k) => k.id)).size, 250, 'no key twice');
  t.same([...listed.map((k) => k.id)].sort(), [...ids].sort(), 'every key once');
  const order = listed.map((k) => `${k.created_at} ${k.id}`);
  t.same(order, [...order].sort().reverse(), 'newest first, ties by id');
  t.same(
    first.body.keys.map((k: { id: string }) => k.id),
    pages[0]!.keys.map((k) => k.id),
    'the default page is the first page',
  );

  const big = await control.admin('GET', '/_admin/v1/keys?limit=1000');
  t.equal(big.body.keys.length, 250, 'limit=1000 fits all 250');
  t.equal(big.body.next_cursor, null);
  const exact = await control.admin('GET', '/_admin/v1/keys?limit=250');
  t.equal(exact.body.keys.length, 250);
  t.equal(exact.body.next_cursor, null, 'a page that ends exactly at the last key has no next cursor');

  // Keys issued while paging land before the cursor: no key repeats, none is skipped.
  const p1 = await control.admin('GET', '/_admin/v1/keys?limit=60');
  clock.advance(1000);
  const fresh = await control.admin('POST', '/_admin/v1/keys', { name: 'fresh' });
  t.equal(fresh.status, 201);
  const rest = await allPages(control, 'limit=60', p1.body.next_cursor);
  const seen = [...p1.body.keys, ...rest.flatMap((p) => p.keys)].map((k: { id: string }) => k.id);
  t.equal(seen.length, 250, 'the old keys, each once');
  t.notOk(seen.includes(fresh.body.id), 'the new key is not in a page after the cursor');

  t.same(Object.keys(first.body).sort(), ['keys', 'next_cursor'], 'the answer keeps its keys field and adds next_cursor');
  t.same(
    Object.keys(first.body.keys[0]).sort(),
    [
      'account_id',
      'application_id',
      'created_at',
      'endpoints',
      'expires_at',
      'id',
      'lift',
      'limit',
      'name',
      'prefix',
      'revoked_at',
      'secrets',
      'status',
      'wallet',
    ],
    'each key has the same fields as before, and its account',
  );
  t.equal(first.body.keys[0].secrets.length, 1, 'live secrets are included');

  const rotatedId = first.body.keys[3].id;
  clock.advance(1000);
  const rotated = await control.admin('POST', `/_admin/v1/keys/${rotatedId}/rotate`, { grace_seconds: 3600 });
  t.equal(rotated.status, 200);
  const again = await control.admin('GET', '/_admin/v1/keys?limit=10');
  const listedRotated = again.body.keys.find((k: { id: string }) => k.id === rotatedId);
  t.same(listedRotated.secrets, rotated.body.secrets, 'a rotated key lists both live secrets, newest first, as show does');
  t.equal(listedRotated.secrets.length, 2);
});

t.test('status is filtered by control, across pages', async (t) => {
  const clock = manualClock();
  const control = await startTestControl(t, { now: clock.now });
  const store = control.handle.ctx.store;
  const start = clock.now() - 10 * DAY;
  const active = await insertKeys(store, 30, start);
  const expired = await insertKeys(store, 7, start + 1000, { expiresAt: clock.now() - 1 });
  const revoked = await insertKeys(store, 12, start + 2000);
  for (const id of revoked) await store.keys.revoke(id, clock.now());
  const later = await insertKeys(store, 30, start + 3000, { expiresAt: clock.now() + DAY });

  for (const [status, want] of [
    ['active', [...active, ...later]],
    ['expired', expired],
    ['revoked', revoked],
  ] as const) {
    const pages = await allPages(control, `status=${status}&limit=5`);
    const got = pages.flatMap((p) => p.keys);
    t.ok(
      got.every((k) => k.status === status),
      `${status}: only ${status} keys`,
    );
    t.same(got.map((k) => k.id).sort(), [...want].sort(), `${status}: every ${status} key once`);
  }

  clock.advance(2 * DAY);
  const nowExpired = await allPages(control, 'status=expired&limit=1000');
  t.equal(nowExpired.flatMap((p) => p.keys).length, 37, 'status follows the clock: the later keys have expired since');
});

t.test('a sparse filter returns short pages instead of scanning every key at once', async (t) => {
  forEachStore(t, async (t, kind) => {
    const clock = manualClock();
    const url = await testDatabaseUrl(t, kind);
    const store = await openTestStore(t, kind, url === null ? {} : { databaseUrl: url });
    // The one expired key is the oldest; 30 active keys are newer.
    const [oldest] = await insertKeys(store, 1, clock.now() - 2 * DAY, { expiresAt: clock.now() - 1 });
    await insertKeys(store, 30, clock.now() - DAY);

    const page = await store.keys.page({ limit: 5, status: 'expired', now: clock.now(), scanLimit: 10 });
    t.same(page.rows, [], 'the first ten keys examined hold no expired key');
    t.ok(page.next, 'but the page says where to go on');
    const second = await store.keys.page({ limit: 5, status: 'expired', now: clock.now(), scanLimit: 10, after: page.next });
    const third = await store.keys.page({ limit: 5, status: 'expired', now: clock.now(), scanLimit: 10, after: second.next });
    const fourth = await store.keys.page({ limit: 5, status: 'expired', now: clock.now(), scanLimit: 10, after: third.next });
    t.same([second.rows.length, third.rows.length], [0, 0]);
    t.same(
      fourth.rows.map((r) => r.id),
      [oldest],
      'the expired key comes in the page that reaches it',
    );
    t.equal(fourth.next, null, 'and then the list ends');

    // The pages use the indexes, in index order (no sort, no OFFSET), and the expiry filter
    // reads the covering index alone: the query plans of each store.
    const explain = await planner(t, kind, store, url);
    const plan = {
      sqlite: {
        indexed: /USING (COVERING )?INDEX keys_by_(status_)?created/,
        sort: /TEMP B-TREE/,
        covering: /USING COVERING INDEX keys_by_status_created/,
      },
      postgres: {
        indexed: /Index (Only )?Scan Backward using keys_by_(status_)?created/,
        sort: /Sort/,
        covering: /Index Only Scan Backward using keys_by_status_created/,
      },
    }[kind];
    for (const sql of [
      `SELECT * FROM keys WHERE (created_at, id) < (1, 'x') ORDER BY created_at DESC, id DESC LIMIT 10`,
      `SELECT * FROM keys WHERE status = 'active' AND (created_at, id) < (1, 'x') ORDER BY created_at DESC, id DESC LIMIT 10`,
    ]) {
      const shown = await explain(sql);
      t.match(shown, plan.indexed, `indexed: ${shown}`);
      t.notMatch(shown, plan.sort, `no sort step: ${shown}`);
    }
    const scanPlan = await explain(
      `SELECT created_at, id, expires_at FROM keys WHERE status = 'active' AND (created_at, id) < (1, 'x') ORDER BY created_at DESC, id DESC LIMIT 10`,
    );
    t.match(scanPlan, plan.covering, `the expiry filter scans the index alone: ${scanPlan}`);
  });
});

/**
 * The query plan of a statement on `store`, one line. On PostgreSQL, sequential scans and
 * sorts are priced out first: a table this small is otherwise read whole and sorted, whatever
 * its indexes, so a plan that still sorts means no index serves the order.
 */
async function planner(t: Test, kind: StoreKind, store: Store, url: string | null): Promise<(sql: string) => Promise<string>> {
  if (kind === 'sqlite') {
    const db = (store as SqliteStore).db;
    return async (sql) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join('; ');
  }
  const client = new Client({ connectionString: url! });
  await client.connect();
  t.teardown(() => client.end());
  await client.query('SET enable_seqscan = off');
  await client.query('SET enable_sort = off');
  return async (sql) => (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`)).rows.map((r) => r['QUERY PLAN'].trim()).join('; ');
}

t.test('bad limit, status, cursor or parameter: 400 naming it', async (t) => {
  const control = await startTestControl(t);
  await insertKeys(control.handle.ctx.store, 3, Date.now() - DAY);
  const cases: [string, string][] = [
    ['limit=0', 'limit'],
    ['limit=1001', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=', 'limit'],
    ['limit=1e3', 'limit'],
    ['status=deleted', 'status'],
    ['status=', 'status'],
    ['cursor=', 'cursor'],
    ['cursor=not-a-cursor', 'cursor'],
    [`cursor=${Buffer.from('12.key_x; DROP TABLE keys').toString('base64url')}`, 'cursor'],
    [`cursor=${Buffer.from('abc.key_x').toString('base64url')}`, 'cursor'],
    ['cursor=%00%1b', 'cursor'],
    ['stauts=active', 'stauts'],
  ];
  for (const [query, field] of cases) {
    const res = await control.admin('GET', `/_admin/v1/keys?${query}`);
    t.equal(res.status, 400, `${query}: 400`);
    t.equal(res.body?.code, 'svc_bad_request', `${query}: svc_bad_request`);
    t.same(
      (res.body?.errors ?? []).map((e: { field: string }) => e.field),
      [field],
      `${query}: names ${field}`,
    );
  }
  for (const query of ['limit=1', 'limit=1000', 'status=active&limit=2', 'status=revoked']) {
    t.equal((await control.admin('GET', `/_admin/v1/keys?${query}`)).status, 200, `${query}: 200`);
  }
});

t.test('svcctl keys list follows next_cursor to the end; --limit and --cursor print one page', async (t) => {
  const clock = manualClock();
  const control = await startTestControl(t, { now: clock.now });
  const store = control.handle.ctx.store;
  const ids = await insertKeys(store, 2100, clock.now() - DAY);
  const revoked = ids.slice(0, 1005);
  for (const id of revoked) await store.keys.revoke(id, clock.now());
  const cli = (...args: string[]) => runCli(args, { control, now: clock.now });

  const all = await cli('keys', 'list', '--json');
  t.equal(all.code, 0, all.stderr);
  const listed = all.json().keys.map((k: { id: string }) => k.id);
  t.equal(listed.length, 2100, 'all 2,100 keys, across three pages of at most 1,000');
  t.equal(new Set(listed).size, 2100, 'each once');
  t.equal(all.json().next_cursor, null);

  const onlyRevoked = await cli('keys', 'list', '--status', 'revoked', '--json');
  t.equal(onlyRevoked.code, 0, onlyRevoked.stderr);
  t.same(
    onlyRevoked
      .json()
      .keys.map((k: { id: string }) => k.id)
      .sort(),
    [...revoked].sort(),
    '--status revoked: the 1,005 revoked keys',
  );

  const human = await cli('keys', 'list', '--status', 'active');
  t.equal(human.code, 0);
  t.equal(human.stdout.split('\n').length, 1 + 1095, 'the table has a header and one row per active key');

  const one = await cli('keys', 'list', '--limit', '2', '--json');
  t.equal(one.code, 0, one.stderr);
  t.equal(one.json().keys.length, 2, '--limit 2: one page of two');
  t.type(one.json().next_cursor, 'string', 'and the cursor of the next');
  const two = await cli('keys', 'list', '--limit', '2', '--cursor', one.json().next_cursor, '--json');
  t.same(
    two.json().keys.map((k: { id: string }) => k.id),
    listed.slice(2, 4),
    '--cursor continues where the page ended',
  );
  const text = await cli('keys', 'list', '--limit', '2');
  t.match(text.stdout, /next page: --cursor \S+/, 'the table says how to get the next page');

  for (const args of [
    ['--limit', '0'],
    ['--limit', '1001'],
    ['--limit', 'x'],
    ['--status', 'gone'],
  ]) {
    const bad = await cli('keys', 'list', ...args);
    t.equal(bad.code, 2, `${args.join(' ')}: usage error`);
  }
  const badCursor = await cli('keys', 'list', '--cursor', 'bogus');
  t.equal(badCursor.code, 2, 'a cursor control refuses: usage error');
  t.match(badCursor.stderr, /cursor/);
});
