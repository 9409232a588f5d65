/**
 * Operators on the admin API, on both stores: each scope opens its own routes and no other
 * (403 `svc_forbidden_scope` naming the scope needed); add, list, show; rotation (the old token
 * dead at once, or at the end of its grace); revocation and expiry (401); root, the bootstrap
 * token, with every scope, revoked by no one and rotated by root only; never revoking the last
 * operator who can manage operators; bad input
 * and tokens of the wrong kind answered as problems; `last_used_at` written at most once a
 * minute; the audit log naming the operator and the token, filtered and paged. And the scope
 * table itself: every admin route has exactly one, every GET needs `read` but the liquidity
 * providers' (`money`).
 */
import t, { type Test } from 'tap';
import { ADMIN_ROUTE_SCOPES, OPERATOR_SCOPES, routeScope, type OperatorScope } from '../../protocol/operators';
import { BROWSER_UA, agentAnswers } from '../fixtures/applications';
import { manualClock, startTestControl, type TestControl } from '../fixtures/control';
import { forEachStore, type StoreKind } from '../fixtures/stores';

const HOUR = 3_600_000;

/** A request each scope allows, that succeeds on a fresh control (with what `prepare` sets up). */
const OWN_ROUTE: Record<OperatorScope, { method: string; path: string; body?: unknown; status: number }> = {
  read: { method: 'GET', path: '/_admin/v1/status', status: 200 },
  keys: { method: 'POST', path: '/_admin/v1/keys', body: { name: 'by scope' }, status: 201 },
  flags: { method: 'POST', path: '/_admin/v1/changelog', body: { text: 'by scope' }, status: 201 },
  endpoints: { method: 'POST', path: '/_admin/v1/endpoints', body: { id: 'echo', upstream: 'http://127.0.0.1:9' }, status: 201 },
  applications: { method: 'POST', path: '/_admin/v1/applications', body: { application: agentAnswers() }, status: 201 },
  gateways: { method: 'PUT', path: '/_admin/v1/gateways/gw-x/weight', body: { weight: 2 }, status: 200 },
  settler: { method: 'POST', path: '/_admin/v1/settler/pause', status: 200 },
  money: { method: 'POST', path: '/_admin/v1/pool/fund', body: { amount: 1_000 }, status: 201 },
  receipts: { method: 'POST', path: '/_admin/v1/receipts/rotate-key', status: 200 },
  operators: { method: 'POST', path: '/_admin/v1/operators', body: { name: 'made-by-scope', scopes: ['operators'] }, status: 201 },
};

async function control(t: Test, kind: StoreKind, now?: () => number): Promise<TestControl> {
  return startTestControl(t, { store: kind, ...(now ? { now } : {}) });
}

/** Add an operator as root; answers its token and token id. */
async function addOperator(c: TestControl, name: string, scopes: string[], extra: Record<string, unknown> = {}) {
  const res = await c.admin('POST', '/_admin/v1/operators', { name, scopes, ...extra });
  if (res.status !== 201) throw new Error(`add ${name}: ${res.status} ${res.text}`);
  return res.body as { name: string; token: string; token_id: string; scopes: string[]; created_at: string; expires_at: string | null };
}

t.test('the scope table: every admin route has exactly one scope, every GET but the liquidity providers’ needs read', async (t) => {
  const c = await startTestControl(t);
  const routes = c.handle.routers.admin.table().map((r) => `${r.method} ${r.pattern}`);
  t.same(
    routes.filter((r) => routeScope(r.split(' ')[0]!, r.split(' ')[1]!) === undefined),
    [],
    'no admin route without a scope',
  );
  t.same(
    Object.keys(ADMIN_ROUTE_SCOPES).filter((r) => !routes.includes(r)),
    [],
    'no scope for a route that does not exist',
  );
  // Who holds the pool's capital is the money operators' business: the liquidity providers' reads need money.
  const LP_READS = ['GET /_admin/v1/lps', 'GET /_admin/v1/lps/:id', 'GET /_admin/v1/lp-withdrawals'];
  t.same(
    Object.entries(ADMIN_ROUTE_SCOPES).filter(
      ([r, scope]) => !LP_READS.includes(r) && r.startsWith('GET ') !== (scope === 'read') && r !== 'POST /_admin/v1/sync/wait',
    ),
    [],
    'every GET but the liquidity providers’ needs read, and read opens no write but sync/wait',
  );
  t.same(
    LP_READS.map((r) => ADMIN_ROUTE_SCOPES[r]),
    ['money', 'money', 'money'],
    'the liquidity providers’ reads need money',
  );
  t.equal(ADMIN_ROUTE_SCOPES['POST /_admin/v1/sync/wait'], 'read');
  t.equal(ADMIN_ROUTE_SCOPES['POST /_admin/v1/changelog'], 'flags');
  t.equal(ADMIN_ROUTE_SCOPES['PUT /_admin/v1/keys/:id/wallet'], 'money');
  t.same(
    OPERATOR_SCOPES.filter((scope) => !Object.values(ADMIN_ROUTE_SCOPES).includes(scope)),
    [],
    'every scope opens some route',
  );
});

forEachStore(t, (t, kind) => {
  t.test('each scope opens its own route and no other', async (t) => {
    const c = await control(t, kind);
    await c.handle.ctx.store.gateways.seen('gw-x', Date.now());
    for (const [i, scope] of OPERATOR_SCOPES.entries()) {
      const op = await addOperator(c, `only-${scope}`, [scope]);
      const own = OWN_ROUTE[scope];
      const ok = await c.admin(own.method, own.path, own.body, op.token);
      t.equal(ok.status, own.status, `${scope}: ${own.method} ${own.path} → ${own.status} (${ok.text.slice(0, 200)})`);

      const otherScope = OPERATOR_SCOPES[(i + 1) % OPERATOR_SCOPES.length]!;
      const other = OWN_ROUTE[otherScope];
      const refused = await c.admin(other.method, other.path, other.body, op.token);
      t.equal(refused.status, 403, `${scope}: ${other.method} ${other.path} → 403`);
      t.equal(refused.headers.get('content-type'), 'application/problem+json');
      t.equal(refused.body?.code, 'svc_forbidden_scope', `${scope}: svc_forbidden_scope`);
      t.match(refused.body?.detail, new RegExp(`needs the scope ${otherScope};`), `${scope}: the detail names ${otherScope}`);
      t.equal(refused.body?.scope, otherScope, `${scope}: and so does the scope member`);
      t.notOk(refused.text.includes(op.token), 'the token is not echoed');
    }
    // Nothing the refusals would have made: only what each scope's own route made.
    const audit = await c.admin('GET', '/_admin/v1/audit?limit=1000');
    const byOperators = audit.body.entries.filter((e: { actor: string }) => e.actor.startsWith('only-'));
    t.same(
      byOperators.map((e: { actor: string; action: string }) => `${e.actor} ${e.action}`).sort(),
      [
        'only-applications applications.submit',
        'only-endpoints endpoints.add',
        'only-flags changelog.add',
        'only-gateways gateways.weight',
        'only-keys keys.issue',
        'only-money pool.fund',
        'only-operators operators.add',
        'only-receipts receipts.rotate_key',
        'only-settler settler.pause',
      ],
      'each change is audited under the operator that made it, and no refused one is',
    );
    t.ok(
      byOperators.every((e: { token_id: string }) => /^opt_[1-9A-HJ-NP-Za-km-z]{12}$/.test(e.token_id)),
      'each with the id of the token, never the token',
    );
  });

  t.test('add, list and show; root is listed first with every scope', async (t) => {
    const clock = manualClock();
    const c = await control(t, kind, clock.now);
    const alice = await addOperator(c, 'alice', ['keys', 'read', 'keys'], { expires_in_seconds: 30 * 86400 });
    t.match(alice, {
      name: 'alice',
      token: /^svc_op_[1-9A-HJ-NP-Za-km-z]{32,44}$/,
      token_id: /^opt_/,
      scopes: ['read', 'keys'],
      created_at: new Date(clock.now()).toISOString(),
      expires_at: new Date(clock.now() + 30 * 86400_000).toISOString(),
    });
    t.same(Object.keys(alice).sort(), ['created_at', 'expires_at', 'name', 'scopes', 'token', 'token_id']);

    const list = await c.admin('GET', '/_admin/v1/operators');
    t.equal(list.status, 200);
    t.same(
      list.body.operators.map((o: { name: string; scopes: string[]; status: string }) => [o.name, o.scopes, o.status]),
      [
        ['root', [...OPERATOR_SCOPES], 'active'],
        ['alice', ['read', 'keys'], 'active'],
      ],
    );
    t.same(list.body.operators[1].tokens, [{ token_id: alice.token_id, created_at: alice.created_at, expires_at: null }]);
    t.same(
      list.body.operators[0].tokens.map((tk: { token_id: string }) => tk.token_id),
      ['root'],
    );
    t.notOk(list.text.includes(alice.token), 'the list never shows a token');

    const shown = await c.admin('GET', '/_admin/v1/operators/alice', undefined, alice.token);
    t.equal(shown.status, 200, 'read shows one');
    t.equal(shown.body.last_used_at, new Date(clock.now()).toISOString(), 'with its last use');
    t.equal((await c.admin('GET', '/_admin/v1/operators/nobody')).body.code, 'svc_not_found');
  });

  t.test('rotate: the old token stops at once, or at the end of its grace', async (t) => {
    const clock = manualClock();
    const c = await control(t, kind, clock.now);
    const first = await addOperator(c, 'bob', ['read']);
    const status = (token: string) => c.admin('GET', '/_admin/v1/status', undefined, token).then((r) => r.status);

    const now = await c.admin('POST', '/_admin/v1/operators/bob/rotate', {});
    t.equal(now.status, 200);
    t.match(now.body, { name: 'bob', token: /^svc_op_/, token_id: /^opt_/, scopes: ['read'] });
    t.same(now.body.replaced, [{ token_id: first.token_id, expires_at: new Date(clock.now()).toISOString() }]);
    t.equal(await status(first.token), 401, 'the old token is dead at once');
    const dead = await c.admin('GET', '/_admin/v1/status', undefined, first.token);
    t.equal(dead.body.code, 'svc_unauthorized');
    t.match(dead.body.detail, /replaced by a rotation/);
    t.equal(await status(now.body.token), 200, 'the new one works');

    clock.advance(1_000);
    const graced = await c.admin('POST', '/_admin/v1/operators/bob/rotate', { grace_seconds: 3600 }, now.body.token);
    t.equal(graced.status, 403, 'read cannot rotate (operators can)');
    const rotated = await c.admin('POST', '/_admin/v1/operators/bob/rotate', { grace_seconds: 3600 });
    t.same(rotated.body.replaced, [{ token_id: now.body.token_id, expires_at: new Date(clock.now() + HOUR).toISOString() }]);
    t.equal(await status(now.body.token), 200, 'the old token works during the grace');
    t.equal(await status(rotated.body.token), 200, 'so does the new one');
    const listed = await c.admin('GET', '/_admin/v1/operators/bob');
    t.same(
      listed.body.tokens.map((tk: { token_id: string; expires_at: string | null }) => [tk.token_id, tk.expires_at]),
      [
        [now.body.token_id, new Date(clock.now() + HOUR).toISOString()],
        [rotated.body.token_id, null],
      ],
    );
    clock.advance(HOUR);
    t.equal(await status(now.body.token), 401, 'and not once it ends');
    t.equal(await status(rotated.body.token), 200);

    t.equal((await c.admin('POST', '/_admin/v1/operators/nobody/rotate', {})).status, 404);
  });

  t.test('revoke and expiry: the tokens stop working at once', async (t) => {
    const clock = manualClock();
    const c = await control(t, kind, clock.now);
    const carol = await addOperator(c, 'carol', ['read']);
    const dave = await addOperator(c, 'dave', ['read'], { expires_in_seconds: 3600 });

    const revoked = await c.admin('POST', '/_admin/v1/operators/carol/revoke');
    t.equal(revoked.status, 200);
    t.match(revoked.body, { name: 'carol', status: 'revoked', revoked_at: new Date(clock.now()).toISOString(), tokens: [], changed: true });
    const refused = await c.admin('GET', '/_admin/v1/status', undefined, carol.token);
    t.equal(refused.status, 401);
    t.equal(refused.body.code, 'svc_unauthorized');
    t.match(refused.body.detail, /carol is revoked/);
    t.equal((await c.admin('POST', '/_admin/v1/operators/carol/revoke')).body.changed, false, 'revoking again changes nothing');
    t.equal((await c.admin('POST', '/_admin/v1/operators/carol/rotate', {})).status, 409, 'a revoked operator is not rotated');
    t.equal((await c.admin('POST', '/_admin/v1/operators', { name: 'carol', scopes: ['read'] })).status, 409, 'nor its name given again');

    t.equal((await c.admin('GET', '/_admin/v1/status', undefined, dave.token)).status, 200);
    clock.advance(HOUR);
    const expired = await c.admin('GET', '/_admin/v1/status', undefined, dave.token);
    t.equal(expired.status, 401, 'an expired operator is refused');
    t.match(expired.body.detail, /dave is expired/);
    t.equal((await c.admin('GET', '/_admin/v1/operators/dave')).body.status, 'expired');
    t.equal((await c.admin('POST', '/_admin/v1/operators/nobody/revoke')).status, 404);
  });

  t.test('root: every scope; revoked by no one, rotated by root only', async (t) => {
    const clock = manualClock();
    const c = await control(t, kind, clock.now);
    const all = await addOperator(c, 'all-scopes', [...OPERATOR_SCOPES]);
    const ops = await addOperator(c, 'ops', ['operators']);
    for (const [who, token] of [
      ['root', undefined],
      ['an operator holding every scope', all.token],
      ['an operators operator', ops.token],
    ] as const) {
      const res = await c.admin('POST', '/_admin/v1/operators/root/revoke', undefined, token);
      t.equal(res.status, 409, `${who} cannot revoke root`);
      t.equal(res.body.code, 'svc_conflict');
      t.equal(res.body.reason, 'root');
      t.match(res.body.detail, /root is never revoked/);
    }
    t.equal((await c.admin('GET', '/_admin/v1/status')).status, 200, 'the bootstrap token still works');
    t.equal((await c.admin('GET', '/_admin/v1/operators/root')).body.status, 'active');

    const byAll = await c.admin('POST', '/_admin/v1/operators/root/rotate', {}, all.token);
    t.equal(byAll.status, 403, 'only root rotates root, even for an operator holding every scope');
    t.equal(byAll.body.code, 'svc_forbidden_scope');
    t.equal(byAll.body.scope, null, 'no scope would do');
    t.match(byAll.body.detail, /rotated by root only/);
    const byOps = await c.admin('POST', '/_admin/v1/operators/root/rotate', {}, ops.token);
    t.equal(byOps.status, 403);
    t.equal(byOps.body.scope, 'read', 'names the first scope of root’s the caller lacks');
    const byRoot = await c.admin('POST', '/_admin/v1/operators/root/rotate', {});
    t.equal(byRoot.status, 400, 'root is told where its token lives');
    t.match(byRoot.body.detail, /admin\.token/);
    t.same((await c.admin('GET', '/_admin/v1/audit?operator=root&action=operators.revoke')).body.entries, [], 'nothing was revoked');

    // An install whose root was revoked by an earlier version: the last manager is still kept.
    const now = clock.now();
    await c.handle.ctx.store.mutate({ actor: 'root', now }, { action: 'operators.revoke', target: 'root' }, async (tx) => {
      await tx.operators.revoke('root', now);
    });
    const rootRefused = await c.admin('GET', '/_admin/v1/status');
    t.equal(rootRefused.status, 401, 'a revoked root opens nothing');
    t.match(rootRefused.body.detail, /root token is revoked/);
    t.equal((await c.admin('POST', '/_admin/v1/operators/ops/revoke', undefined, all.token)).status, 200, 'one of two managers goes');
    const last = await c.admin('POST', '/_admin/v1/operators/all-scopes/revoke', undefined, all.token);
    t.equal(last.status, 409, 'the last operator who can manage operators is not revoked');
    t.match(last.body.detail, /last operator who can manage operators/);
  });

  t.test('bad input and tokens of the wrong kind are clear problems', async (t) => {
    const c = await control(t, kind);
    const cases: [unknown, string][] = [
      [{ name: 'eve', scopes: ['read', 'everything'] }, 'scopes.1'],
      [{ name: 'eve', scopes: [] }, 'scopes'],
      [{ name: 'root', scopes: ['read'] }, 'name'],
      [{ name: 'Eve', scopes: ['read'] }, 'name'],
      [{ name: '-eve', scopes: ['read'] }, 'name'],
      [{ name: 'e'.repeat(64), scopes: ['read'] }, 'name'],
      [{ name: 'eve', scopes: ['read'], token: 'mine' }, 'token'],
      [{ name: 'eve', scopes: ['read'], expires_in_seconds: 0 }, 'expires_in_seconds'],
    ];
    for (const [body, field] of cases) {
      const res = await c.admin('POST', '/_admin/v1/operators', body);
      t.equal(res.status, 400, `${JSON.stringify(body)}: 400`);
      t.equal(res.body.code, 'svc_bad_request');
      t.ok(
        res.body.errors.some((e: { field: string }) => e.field === field),
        `${JSON.stringify(body)}: names ${field}`,
      );
    }
    t.match((await c.admin('POST', '/_admin/v1/operators', { name: 'root', scopes: ['read'] })).body.detail, /reserved/);
    t.equal((await addOperator(c, 'eve', ['read'])).name, 'eve', 'a name with the rules is fine');
    const dup = await c.admin('POST', '/_admin/v1/operators', { name: 'eve', scopes: ['keys'] });
    t.equal(dup.status, 409, 'a duplicate name');
    t.equal(dup.body.code, 'svc_conflict');
    const badRotate = await c.admin('POST', '/_admin/v1/operators/eve/rotate', { grace_seconds: -1 });
    t.equal(badRotate.status, 400);

    const key = await c.admin('POST', '/_admin/v1/keys', { name: 'agent' });
    const metricsToken = c.handle.bootstrap.metricsToken.token!;
    const wrong: [string, string][] = [
      ['a beta key', key.body.key],
      ['the sync token', c.syncToken],
      ['the metrics token', metricsToken],
      ['an operator-shaped token nobody holds', 'svc_op_' + '1'.repeat(44)],
    ];
    for (const [what, token] of wrong) {
      const res = await c.admin('GET', '/_admin/v1/status', undefined, token);
      t.equal(res.status, 401, `${what}: 401`);
      t.equal(res.body.code, 'svc_unauthorized', `${what}: svc_unauthorized`);
      t.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="admin"/);
      t.notOk(res.text.includes(token), `${what}: not echoed`);
    }
  });

  t.test('last_used_at is written at most once a minute', async (t) => {
    const clock = manualClock();
    const c = await control(t, kind, clock.now);
    const op = await addOperator(c, 'frank', ['read']);
    const lastUsed = async () => (await c.handle.ctx.store.operators.byName('frank'))!.last_used_at;
    t.equal(await lastUsed(), null, 'never used');
    const t0 = clock.now();
    await c.admin('GET', '/_admin/v1/status', undefined, op.token);
    t.equal(await lastUsed(), t0, 'the first use is recorded');
    clock.advance(59_000);
    await c.admin('GET', '/_admin/v1/status', undefined, op.token);
    t.equal(await lastUsed(), t0, 'a use within the minute writes nothing');
    clock.advance(1_000);
    await c.admin('GET', '/_admin/v1/status', undefined, op.token);
    t.equal(await lastUsed(), t0 + 60_000, 'a minute later it is written again');
  });

  t.test('the audit log names the operator and its token, filtered and paged', async (t) => {
    const clock = manualClock();
    const c = await control(t, kind, clock.now);
    const gina = await addOperator(c, 'gina', ['keys', 'flags', 'read']);
    const start = new Date(clock.now()).toISOString();
    for (let i = 0; i < 5; i++) {
      clock.advance(1_000);
      await c.admin('POST', '/_admin/v1/keys', { name: `k${i}` }, gina.token);
    }
    await c.admin('POST', '/_admin/v1/changelog', { text: 'by gina' }, gina.token);
    await c.admin('POST', '/_admin/v1/keys', { name: 'by root' });

    const mine = await c.admin('GET', '/_admin/v1/audit?operator=gina');
    t.same(
      mine.body.entries.map((e: { action: string }) => e.action),
      ['changelog.add', 'keys.issue', 'keys.issue', 'keys.issue', 'keys.issue', 'keys.issue'],
    );
    t.ok(mine.body.entries.every((e: { token_id: string; approved_by: null }) => e.token_id === gina.token_id && e.approved_by === null));
    t.equal(mine.body.next_cursor, null);
    const rootRows = await c.admin('GET', '/_admin/v1/audit?operator=root');
    t.same(
      rootRows.body.entries.map((e: { action: string; token_id: string }) => [e.action, e.token_id]),
      [
        ['keys.issue', 'root'],
        ['operators.add', 'root'],
      ],
    );

    const changelog = await c.admin('GET', '/_admin/v1/changelog');
    t.equal(changelog.body.entries[0].author, 'gina', 'the admin changelog names the operator');
    const pub = await c.request(`${c.urls.api}/api/v1/changelog`, { headers: { 'user-agent': BROWSER_UA } });
    t.equal(pub.status, 200);
    t.match(pub.text, /by gina/, 'the public changelog has the notice');
    t.notOk(pub.text.includes('"gina"'), 'but names no one');

    const family = await c.admin('GET', '/_admin/v1/audit?action=keys&operator=gina&limit=2');
    t.equal(family.body.entries.length, 2);
    t.ok(
      family.body.entries.every((e: { action: string }) => e.action === 'keys.issue'),
      'a family matches its actions',
    );
    const pages = [family.body.entries];
    let cursor: string | null = family.body.next_cursor;
    while (cursor !== null) {
      const page = await c.admin('GET', `/_admin/v1/audit?action=keys&operator=gina&limit=2&cursor=${cursor}`);
      t.equal(page.status, 200);
      pages.push(page.body.entries);
      cursor = page.body.next_cursor;
    }
    t.same(
      pages.map((p) => p.length),
      [2, 2, 1],
      'five rows in pages of two, the last one ending the list',
    );
    t.equal(new Set(pages.flat().map((e: { id: number }) => e.id)).size, 5, 'none twice');
    t.same((await c.admin('GET', '/_admin/v1/audit?action=keys.i')).body.entries, [], 'no prefix match within a name');

    const since = await c.admin(
      'GET',
      `/_admin/v1/audit?operator=gina&since=${encodeURIComponent(new Date(Date.parse(start) + 3_000).toISOString())}`,
    );
    t.equal(since.body.entries.length, 4, 'since: rows at or after the time');

    for (const query of ['since=yesterday', 'cursor=nope', 'limit=0', 'action=KEYS', 'who=gina']) {
      const res = await c.admin('GET', `/_admin/v1/audit?${query}`);
      t.equal(res.status, 400, `${query}: 400`);
      t.equal(res.body.code, 'svc_bad_request');
    }
  });
});
