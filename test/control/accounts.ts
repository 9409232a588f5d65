/**
 * Accounts through the admin API: add, list (by name, in pages), show by id or name; keys issued
 * into an account or, without one, into an account of their own; bad input refused naming the
 * field; every change audited with the operator's name. Then SQLite's migration 20 and
 * PostgreSQL's 11: every key of an install from before accounts gets an account of its own.
 */
import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { Pool } from 'pg';
import { MIGRATIONS } from '../../control/store/migrations';
import { migratePg } from '../../control/store/pg/migrate';
import { PG_MIGRATIONS } from '../../control/store/pg/migrations';
import { PG_TYPES } from '../../control/store/pg/types';
import { startTestControl } from '../fixtures/control';
import { newInstall, openInstall, sqlitePath, type Install } from '../fixtures/store-sql';
import { forEachStore, type StoreKind } from '../fixtures/stores';

forEachStore(t, (t, kind) => {
  t.test('add, show, list; keys issued into an account share it', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const added = await control.admin('POST', '/_admin/v1/accounts', { name: 'acme', low: 5_000_000 });
    t.equal(added.status, 201);
    t.match(added.body, { name: 'acme', balance: 0, low: 5_000_000, refill: null, wallet: null, keys: 0, created_by: 'root' });
    t.match(added.body.id, /^acc_[1-9A-HJ-NP-Za-km-z]{12}$/, 'an opaque id');
    t.type(added.body.version, 'number');

    const a = await control.admin('POST', '/_admin/v1/keys', { name: 'a', account: 'acme' });
    const b = await control.admin('POST', '/_admin/v1/keys', { name: 'b', account: added.body.id });
    t.equal(a.status, 201, 'issued into the account by its name');
    t.equal(b.status, 201, 'and by its id');
    t.equal(a.body.account_id, added.body.id);
    t.equal(b.body.account_id, added.body.id);

    const byName = await control.admin('GET', '/_admin/v1/accounts/acme');
    const byId = await control.admin('GET', `/_admin/v1/accounts/${added.body.id}`);
    t.equal(byName.status, 200);
    t.equal(byName.body.keys, 2, 'both keys belong to it');
    const { version: _v, ...view } = added.body;
    t.same(byId.body, { ...view, keys: 2 }, 'show by id is show by name');
    t.same(byName.body, byId.body);

    const own = await control.admin('POST', '/_admin/v1/keys', { name: 'alone' });
    t.equal(own.status, 201);
    t.not(own.body.account_id, added.body.id, 'a key without an account gets its own');
    const ownAccount = await control.admin('GET', `/_admin/v1/accounts/${own.body.account_id}`);
    t.match(ownAccount.body, { name: own.body.id, keys: 1, balance: 0 }, 'named after the key');

    const missing = await control.admin('GET', '/_admin/v1/accounts/nobody');
    t.equal(missing.status, 404);
    t.equal(missing.body.code, 'svc_not_found');

    const audit = await control.admin('GET', '/_admin/v1/audit');
    const entry = audit.body.entries.find((e: { action: string }) => e.action === 'accounts.add');
    t.match(entry, { actor: 'root', target: added.body.id, detail: { name: 'acme', low: 5_000_000 } }, 'audited with the operator');
    const issuedInto = audit.body.entries.find(
      (e: { action: string; target: string }) => e.action === 'keys.issue' && e.target === a.body.id,
    );
    t.match(issuedInto.detail, { account_id: added.body.id }, "the key's account is in its issue's audit row");
  });

  t.test('pages by name follow next_cursor to the end', async (t) => {
    const control = await startTestControl(t, { store: kind });
    for (const name of ['delta', 'alpha', 'echo', 'charlie', 'bravo']) {
      t.equal((await control.admin('POST', '/_admin/v1/accounts', { name })).status, 201);
    }
    const names: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? '?limit=2' : `?limit=2&cursor=${cursor}`;
      const page = await control.admin('GET', `/_admin/v1/accounts${query}`);
      t.equal(page.status, 200);
      t.ok(page.body.accounts.length <= 2);
      names.push(...page.body.accounts.map((a: { name: string }) => a.name));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor !== null);
    t.same(names, ['alpha', 'bravo', 'charlie', 'delta', 'echo'], 'every account once, by name');
    t.equal(pages, 3);
    const all = await control.admin('GET', '/_admin/v1/accounts');
    t.equal(all.body.accounts.length, 5);
    t.equal(all.body.next_cursor, null);
  });

  t.test('bad input is refused naming the field, and nothing is added', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const cases: [unknown, string][] = [
      [{ name: '' }, 'name'],
      [{ name: '-leading-dash' }, 'name'],
      [{ name: 'x'.repeat(65) }, 'name'],
      [{ name: 'has space' }, 'name'],
      [{ name: 'key_mine' }, 'name'],
      [{ name: 'acc_mine' }, 'name'],
      [{ name: 'ok', low: -1 }, 'low'],
      [{ name: 'ok', low: 1.5 }, 'low'],
      [{ name: 'ok', extra: true }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await control.admin('POST', '/_admin/v1/accounts', body);
      t.equal(res.status, 400, JSON.stringify(body));
      t.equal(res.body.code, 'svc_bad_request');
      t.ok(
        res.body.errors.some((e: { field: string }) => e.field === field || e.field.startsWith(`${field}`) || e.field === ''),
        `names ${field}: ${JSON.stringify(res.body.errors)}`,
      );
    }
    t.equal((await control.admin('POST', '/_admin/v1/accounts', { name: 'taken' })).status, 201);
    const again = await control.admin('POST', '/_admin/v1/accounts', { name: 'taken' });
    t.equal(again.status, 409, 'a name is one account');
    t.match(again.body, { code: 'svc_conflict', reason: 'exists' });

    const unknown = await control.admin('POST', '/_admin/v1/keys', { account: 'nobody' });
    t.equal(unknown.status, 400, 'a key is not issued into an account that does not exist');
    t.same(unknown.body.errors, [{ field: 'account', message: 'no account named nobody' }]);

    const badCursor = await control.admin('GET', '/_admin/v1/accounts?cursor=%21%21');
    t.equal(badCursor.status, 400);
    t.equal(badCursor.body.errors[0].field, 'cursor');

    const list = await control.admin('GET', '/_admin/v1/accounts');
    t.same(
      list.body.accounts.map((a: { name: string }) => a.name),
      ['taken'],
      'nothing else was added',
    );
  });
});

/** Key rows as the schema before accounts stores them. */
const KEYS = [
  `INSERT INTO keys (id, name, prefix, status, created_at, created_by, endpoints) VALUES ('key_AAAAAAAAAAAA', 'one', 'svc_beta_a', 'active', 1, 'root', '[]')`,
  `INSERT INTO keys (id, name, prefix, status, created_at, created_by, endpoints) VALUES ('legacy', NULL, 'svc_beta_b', 'revoked', 2, 'ops', '[]')`,
];

/** An install whose database is at the schema before accounts, holding `KEYS`. */
async function oldInstall(t: Test, kind: StoreKind): Promise<Install> {
  const at = await newInstall(t, kind);
  if (at.url === null) {
    const db = new Database(sqlitePath(at));
    for (const m of MIGRATIONS.slice(0, 19)) db.exec(m);
    db.pragma('user_version = 19');
    for (const sql of KEYS) db.exec(sql);
    db.close();
    return at;
  }
  const pool = new Pool({ connectionString: at.url, types: PG_TYPES, max: 1 });
  try {
    await migratePg(pool, PG_MIGRATIONS.slice(0, 10));
    for (const sql of KEYS) await pool.query(sql);
  } finally {
    await pool.end();
  }
  return at;
}

t.test('every key of an install from before accounts gets an account of its own', async (t) => {
  forEachStore(t, async (t, kind) => {
    const at = await oldInstall(t, kind);
    const store = await openInstall(t, at);
    const one = await store.keys.byId('key_AAAAAAAAAAAA');
    const legacy = await store.keys.byId('legacy');
    t.equal(one?.account_id, 'acc_AAAAAAAAAAAA', "the key id's random part");
    t.equal(legacy?.account_id, 'acc_legacy', 'or the whole id');
    t.match(await store.accounts.summary('acc_AAAAAAAAAAAA'), {
      name: 'key_AAAAAAAAAAAA',
      keys: 1,
      balance: 0,
      created_by: 'root',
      created_at: 1,
    });
    t.match(await store.accounts.summary('acc_legacy'), { name: 'legacy', keys: 1, created_by: 'ops' });
    t.equal((await store.accounts.page(null, 10)).length, 2, 'one account per key, no more');
  });
});
