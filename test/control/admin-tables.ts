/**
 * The store's admin-side table families (keys, flags, changelog, audit, gateways; endpoints are
 * `endpoints-table.ts`) answer the same on every store: what each method returns, the order
 * lists come in, which writes report a change, and the rules a statement enforces (a rotation
 * never extends a grace already running).
 */
import t, { type Test } from 'tap';
import type { Store } from '../../control/store';
import type { NewKey } from '../../control/store/keys';
import { forEachStore, openTestStore } from '../fixtures/stores';

const NOW = 1_700_000_000_000;
const hash = (n: string) => n.padEnd(64, '0');

const newKey = (id: string, extra: Partial<NewKey> = {}): NewKey => ({
  id,
  name: null,
  prefix: `svc_beta_${id}`,
  hash: hash(`a${id}`),
  created_at: NOW,
  created_by: 'test',
  expires_at: null,
  wallet: null,
  endpoints: [],
  limit: null,
  application_id: null,
  ...extra,
});

forEachStore(t, (t, kind) => {
  const open = (t: Test): Promise<Store> => openTestStore(t, kind);

  t.test('flags: set reports a change only when the value changes; values follow', async (t) => {
    const store = await open(t);
    t.same(
      (await store.flags.list()).map((f) => [f.name, f.value]),
      [
        ['beta_gate_enabled', false],
        ['maintenance_mode', false],
      ],
      'seeded off, by name',
    );
    t.equal(await store.flags.set('maintenance_mode', true, NOW, 'ops', 'upgrade'), true, 'off to on: changed');
    t.equal(await store.flags.set('maintenance_mode', true, NOW + 1, 'ops2', null), false, 'on to on: unchanged');
    t.same(await store.flags.get('maintenance_mode'), {
      name: 'maintenance_mode',
      value: true,
      updated_at: new Date(NOW + 1).toISOString(),
      updated_by: 'ops2',
      note: null,
    });
    t.same(await store.flags.values(), { beta_gate_enabled: false, maintenance_mode: true });
    t.equal(await store.flags.set('maintenance_mode', false, NOW + 2, 'ops', null), true, 'on to off: changed');
  });

  t.test('changelog: ids grow, newest first, a flag’s history apart from notices', async (t) => {
    const store = await open(t);
    const a = await store.changelog.add({ at: NOW, kind: 'notice', text: 'hello', author: 'ops' });
    const b = await store.changelog.add({ at: NOW + 1, kind: 'flag', text: 'on', flag: 'beta_gate_enabled', value: true, author: 'ops' });
    const c = await store.changelog.add({ at: NOW + 2, kind: 'flag', text: 'off', flag: 'beta_gate_enabled', value: false, author: 'ops' });
    await store.changelog.add({ at: NOW + 3, kind: 'flag', text: 'maint', flag: 'maintenance_mode', value: true, author: 'ops' });
    t.ok(a >= 1 && a < b && b < c, 'ids grow');
    t.same(await store.changelog.byId(a), {
      id: a,
      at: new Date(NOW).toISOString(),
      kind: 'notice',
      text: 'hello',
      flag: null,
      value: null,
      author: 'ops',
    });
    t.equal(await store.changelog.byId(c + 100), undefined, 'unknown id');
    t.same(
      (await store.changelog.list()).map((e) => e.text),
      ['maint', 'off', 'on', 'hello'],
    );
    t.same(
      (await store.changelog.list(2)).map((e) => e.text),
      ['maint', 'off'],
      'limit',
    );
    t.same(
      (await store.changelog.byFlag('beta_gate_enabled')).map((e) => [e.text, e.value]),
      [
        ['off', false],
        ['on', true],
      ],
    );
    t.same(await store.changelog.byFlag('beta_gate_enabled', 1).then((l) => l.map((e) => e.id)), [c]);
  });

  t.test('audit: every mutation is recorded, newest first, details parsed', async (t) => {
    const store = await open(t);
    await store.audit.record(NOW, 'ops', 'direct.write', null);
    await store.mutate(
      { actor: 'alice', tokenId: 'opt_a', now: NOW + 1 },
      { action: 'flags.set', target: 'maintenance_mode', detail: { value: true } },
      (tx) => tx.flags.set('maintenance_mode', true, NOW + 1, 'alice', null),
    );
    const entries = await store.audit.list();
    t.same(
      entries.map(({ id: _id, ...e }) => e),
      [
        {
          at: new Date(NOW + 1).toISOString(),
          actor: 'alice',
          token_id: 'opt_a',
          approved_by: null,
          action: 'flags.set',
          target: 'maintenance_mode',
          detail: { value: true },
        },
        {
          at: new Date(NOW).toISOString(),
          actor: 'ops',
          token_id: null,
          approved_by: null,
          action: 'direct.write',
          target: null,
          detail: {},
        },
      ],
    );
    t.ok(entries[0]!.id > entries[1]!.id, 'ids grow');
    t.equal((await store.audit.list(1)).length, 1, 'limit');
  });

  t.test('gateways: attached to the control serving their stream, detached when it closes', async (t) => {
    const store = await open(t);
    await store.gateways.acked('gw-a', 4, null, NOW);
    const row = await store.gateways.attach('gw-a', 'ctl_one', 'undici', NOW + 10);
    t.match(
      row,
      { id: 'gw-a', applied_version: 4, first_seen: NOW, last_seen: NOW + 10, control_id: 'ctl_one', engine: 'undici' },
      'answers the row as it is now',
    );
    t.match(
      await store.gateways.attach('gw-new', 'ctl_one', null, NOW + 11),
      { first_seen: NOW + 11, control_id: 'ctl_one', engine: null },
      'a new gateway is known from its attach',
    );
    await store.gateways.attach('gw-a', 'ctl_two', 'http-proxy', NOW + 12);
    await store.gateways.detach('gw-a', 'ctl_one');
    t.match(
      await store.gateways.byId('gw-a'),
      { control_id: 'ctl_two', engine: 'http-proxy' },
      'a stale detach by the control it left does not detach it',
    );
    await store.gateways.detach('gw-a', 'ctl_two');
    t.match(
      await store.gateways.byId('gw-a'),
      { control_id: null, engine: 'http-proxy', last_seen: NOW + 12 },
      'detached by its control; its engine is kept',
    );
  });

  t.test('gateways: seen, acks, nacks, weights and shares', async (t) => {
    const store = await open(t);
    await store.gateways.seen('gw-b', NOW);
    await store.gateways.seen('gw-b', NOW + 5);
    await store.gateways.acked('gw-a', 7, 'f'.repeat(64), NOW + 1);
    await store.gateways.nacked('gw-a', 8, 'bad snapshot', NOW + 2);
    await store.gateways.acked('gw-c', 3, null, NOW + 3);
    t.same(await store.gateways.byId('gw-a'), {
      id: 'gw-a',
      applied_version: 7,
      applied_sha256: 'f'.repeat(64),
      first_seen: NOW + 1,
      last_seen: NOW + 2,
      last_nack_version: 8,
      last_nack_reason: 'bad snapshot',
      last_nack_at: NOW + 2,
      weight: 1,
      share: null,
      control_id: null,
      engine: null,
    });
    const b = (await store.gateways.byId('gw-b'))!;
    t.same([b.first_seen, b.last_seen, b.applied_version], [NOW, NOW + 5, 0], 'seen again: first_seen kept, last_seen moves');
    t.equal(await store.gateways.setWeight('gw-a', 2.5), true);
    t.equal(await store.gateways.setWeight('gw-none', 2), false, 'unknown gateway');
    await store.gateways.recordShares(
      new Map([
        ['gw-a', 0.625],
        ['gw-b', 0.25],
        ['gw-c', 0.125],
      ]),
    );
    t.same(
      (await store.gateways.list()).map((g) => [g.id, g.weight, g.share]),
      [
        ['gw-a', 2.5, 0.625],
        ['gw-b', 1, 0.25],
        ['gw-c', 1, 0.125],
      ],
      'by id',
    );
    await t.rejects(
      store.gateways.recordShares(
        new Map([
          ['gw-a', 0.5],
          ['gw-b', 2],
        ]),
      ),
      'a share over 1 is refused',
    );
    t.same(
      (await store.gateways.list()).map((g) => g.share),
      [0.625, 0.25, 0.125],
      'and no share of that push is recorded',
    );
    t.equal(await store.gateways.byId('gw-none'), undefined);
  });

  t.test('keys: rows, secrets, rotation, revocation, counts', async (t) => {
    const store = await open(t);
    await store.keys.insert(newKey('k1', { name: 'one', endpoints: ['echo'], limit: { count: 5, window_seconds: 10 } }));
    await store.keys.insert(newKey('k2', { created_at: NOW + 1, expires_at: NOW + 1_000, wallet: 'w2' }));
    await store.keys.insert(newKey('k3', { created_at: NOW + 1 }));
    t.same(await store.keys.byId('k1'), {
      id: 'k1',
      name: 'one',
      prefix: 'svc_beta_k1',
      status: 'active',
      created_at: NOW,
      created_by: 'test',
      expires_at: null,
      revoked_at: null,
      wallet: null,
      endpoints: '["echo"]',
      limit_count: 5,
      limit_window_s: 10,
      lift_count: null,
      lift_window_s: null,
      lift_until: null,
      application_id: null,
      account_id: 'acc_k1',
    });
    t.equal(await store.keys.byId('none'), undefined);
    t.same(
      (await store.keys.list()).map((k) => k.id),
      ['k3', 'k2', 'k1'],
      'newest first, ties by id descending',
    );
    await t.rejects(store.keys.insert(newKey('k1', { hash: hash('other') })), 'a key id is unique');

    // Rotation: the old secret counts down, the new one takes over the prefix.
    await store.keys.expireSecrets('k1', NOW + 60_000, NOW + 10);
    await store.keys.addSecret('k1', hash('b1'), 'svc_beta_b1', NOW + 10);
    t.equal((await store.keys.byId('k1'))!.prefix, 'svc_beta_b1');
    t.same(
      (await store.keys.liveSecrets('k1', NOW + 10)).map((s) => [s.hash, s.expires_at]),
      [
        [hash('b1'), null],
        [hash('ak1'), NOW + 60_000],
      ],
      'newest first',
    );
    // A second rotation keeps the first grace and starts one for the second secret.
    await store.keys.expireSecrets('k1', NOW + 120_000, NOW + 20);
    await store.keys.addSecret('k1', hash('c1'), 'svc_beta_c1', NOW + 20);
    t.same(
      (await store.keys.liveSecrets('k1', NOW + 20)).map((s) => [s.hash, s.expires_at]),
      [
        [hash('c1'), null],
        [hash('b1'), NOW + 120_000],
        [hash('ak1'), NOW + 60_000],
      ],
      'a grace already running is never extended',
    );
    t.same(
      (await store.keys.liveSecrets('k1', NOW + 60_000)).map((s) => s.hash),
      [hash('c1'), hash('b1')],
      'an expired secret is not live',
    );

    const many = await store.keys.liveSecretsOf(['k1', 'k2', 'none'], NOW + 20);
    t.same([...many.keys()].sort(), ['k1', 'k2'], 'keys with live secrets only');
    t.same(
      many.get('k1')!.map((s) => s.hash),
      [hash('c1'), hash('b1'), hash('ak1')],
      'newest first, as liveSecrets',
    );
    t.same(many.get('k2'), [{ hash: hash('ak2'), key_id: 'k2', prefix: 'svc_beta_k2', created_at: NOW + 1, expires_at: null }]);
    t.equal((await store.keys.liveSecretsOf([], NOW)).size, 0);

    t.equal(await store.keys.revoke('k3', NOW + 30), true);
    t.equal(await store.keys.revoke('k3', NOW + 31), false, 'already revoked');
    t.equal(await store.keys.revoke('none', NOW + 31), false, 'unknown');
    t.same([(await store.keys.byId('k3'))!.status, (await store.keys.byId('k3'))!.revoked_at], ['revoked', NOW + 30]);

    await store.keys.setWallet('k1', 'wallet-1');
    await store.keys.setLift('k1', { count: 100, window_seconds: 60, until: NOW + 3_600_000 });
    const k1 = (await store.keys.byId('k1'))!;
    t.same([k1.wallet, k1.lift_count, k1.lift_window_s, k1.lift_until], ['wallet-1', 100, 60, NOW + 3_600_000]);
    await store.keys.setWallet('k1', null);
    await store.keys.setLift('k1', null);
    const cleared = (await store.keys.byId('k1'))!;
    t.same([cleared.wallet, cleared.lift_count, cleared.lift_window_s, cleared.lift_until], [null, null, null, null]);

    t.same(await store.keys.counts(NOW + 100), { total: 3, active: 2 }, 'revoked keys are not active');
    t.same(await store.keys.counts(NOW + 1_000), { total: 3, active: 1 }, 'nor are expired ones');
  });

  t.test('keys: pages newest first by status, with where the next page starts', async (t) => {
    const store = await open(t);
    // Two keys per millisecond: ties broken by id, descending.
    for (let i = 0; i < 12; i++) {
      const id = `k${String(i).padStart(2, '0')}`;
      await store.keys.insert(newKey(id, { created_at: NOW + Math.floor(i / 2), expires_at: i % 3 === 0 ? NOW + 100 : null }));
    }
    for (const id of ['k01', 'k04', 'k07']) await store.keys.revoke(id, NOW + 50);
    const now = NOW + 200;
    const all = async (status?: 'active' | 'expired' | 'revoked', limit = 2, scanLimit?: number) => {
      const ids: string[][] = [];
      let after = null;
      for (let guard = 0; guard < 50; guard++) {
        const page = await store.keys.page({
          limit,
          now,
          ...(status ? { status } : {}),
          ...(after ? { after } : {}),
          ...(scanLimit ? { scanLimit } : {}),
        });
        ids.push(page.rows.map((r) => r.id));
        if (page.next === null) return ids;
        after = page.next;
      }
      throw new Error('next never became null');
    };
    t.same(await all(undefined, 5), [
      ['k11', 'k10', 'k09', 'k08', 'k07'],
      ['k06', 'k05', 'k04', 'k03', 'k02'],
      ['k01', 'k00'],
    ]);
    t.same(
      await all(undefined, 6),
      [
        ['k11', 'k10', 'k09', 'k08', 'k07', 'k06'],
        ['k05', 'k04', 'k03', 'k02', 'k01', 'k00'],
      ],
      'a page ending at the last key has no next',
    );
    t.same(await all('revoked'), [['k07', 'k04'], ['k01']]);
    t.same(await all('expired'), [
      ['k09', 'k06'],
      ['k03', 'k00'],
    ]);
    t.same(await all('active', 3), [
      ['k11', 'k10', 'k08'],
      ['k05', 'k02'],
    ]);
    t.same(
      await all('active', 2, 3),
      [['k11', 'k10'], ['k08', 'k05'], ['k02'], []],
      'a scan of 3 positions a page: short pages, none skipped, the last one empty',
    );
    const page = await store.keys.page({ limit: 1, now, status: 'expired' });
    t.same(page.next, { created_at: NOW + 4, id: 'k08' }, 'next: the last position examined before the next match');
  });
});
