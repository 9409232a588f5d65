/**
 * Control's read side of a full snapshot: pages follow storage order, a page whose keys have
 * no live secret left does not end the snapshot, revoked and expired keys stay out, and each
 * key carries its live secrets oldest first with its endpoint list, limit and lift.
 */
import t from 'tap';
import type { Store } from '../../control/store';
import { writeSnapshot } from '../../control/sync/snapshot';
import { SnapshotDigest, type SnapshotKey } from '../../protocol/snapshot';
import { forEachStore, openTestStore } from '../fixtures/stores';

const NOW = 1_700_000_000_000;
const LIMITS = { key: { count: 60, window_seconds: 60, burst: 10 }, ip: { count: 10, window_seconds: 60, burst: 5 } };
const hash = (n: string) => n.padEnd(64, '0');

async function seed(store: Store): Promise<void> {
  const insert = (
    id: string,
    extra: { endpoints?: string[]; limit?: { count: number; window_seconds: number }; expires_at?: number } = {},
  ) =>
    store.keys.insert({
      id,
      name: null,
      prefix: `svc_beta_${id.slice(-1)}`,
      hash: hash(`a${id.slice(-1)}`),
      created_at: NOW - 10_000,
      created_by: 'test',
      expires_at: extra.expires_at ?? null,
      wallet: null,
      endpoints: extra.endpoints ?? [],
      limit: extra.limit ?? null,
      application_id: null,
    });
  // Ids deliberately out of storage order.
  for (const id of ['key_7', 'key_1', 'key_3', 'key_4', 'key_5', 'key_6']) await insert(id);
  await insert('key_2', { endpoints: ['echo', 'other'], limit: { count: 5, window_seconds: 10 } });
  await insert('key_8', { expires_at: NOW - 1 });
  // key_3 and key_4, next to each other, have no live secret left.
  await store.keys.expireSecrets('key_3', NOW - 1, NOW - 5_000);
  await store.keys.expireSecrets('key_4', NOW - 1, NOW - 5_000);
  // key_5 is in a rotation's grace; key_6 is revoked.
  await store.keys.expireSecrets('key_5', NOW + 60_000, NOW - 5_000);
  await store.keys.addSecret('key_5', hash('b5'), 'svc_beta_b', NOW - 1_000);
  await store.keys.revoke('key_6', NOW - 1_000);
  await store.keys.setLift('key_2', { count: 100, window_seconds: 60, until: NOW + 3_600_000 });
}

forEachStore(t, (t, kind) => {
  t.test('pages in storage order; keys without a live secret neither appear nor end the read', async (t) => {
    const store = await openTestStore(t, kind);
    await seed(store);
    const reader = store.openSnapshotReader();
    t.teardown(() => reader.end());
    await reader.begin();
    const pages: string[][] = [];
    for (let page = await reader.nextPage(2, NOW); page !== null; page = await reader.nextPage(2, NOW)) pages.push(page.map((k) => k.id));
    t.same(pages, [['key_7', 'key_1'], [], ['key_5', 'key_2']], 'the empty middle page is followed by the rest');
  });

  t.test('a key carries its live secrets oldest first, endpoints, limit, lift and account', async (t) => {
    const store = await openTestStore(t, kind);
    await seed(store);
    t.same(await store.liveKey('key_5', NOW), {
      id: 'key_5',
      secrets: [
        { hash: hash('a5'), expires_at: NOW + 60_000 },
        { hash: hash('b5'), expires_at: null },
      ],
      expires_at: null,
      endpoints: [],
      limit: null,
      lift: null,
      account: 'acc_5',
    });
    t.same(await store.liveKey('key_2', NOW), {
      id: 'key_2',
      secrets: [{ hash: hash('a2'), expires_at: null }],
      expires_at: null,
      endpoints: ['echo', 'other'],
      limit: { count: 5, window_seconds: 10 },
      lift: { count: 100, window_seconds: 60, until: NOW + 3_600_000 },
      account: 'acc_2',
    });
    t.same(
      await Promise.all(['key_3', 'key_6', 'key_8', 'key_none'].map((id) => store.liveKey(id, NOW))),
      [null, null, null, null],
      'no live secret, revoked, expired, unknown',
    );
    t.same((await store.liveKey('key_5', NOW + 60_000))?.secrets, [{ hash: hash('b5'), expires_at: null }], 'after the grace');
  });

  t.test('writeSnapshot streams every live key once, under a digest that matches', async (t) => {
    const store = await openTestStore(t, kind);
    await seed(store);
    const lines: string[] = [];
    const { version, sha256 } = await writeSnapshot(store, LIMITS, NOW, async (line) => void lines.push(line), 1);
    const parsed = lines.map((l) => JSON.parse(l));
    t.same(
      parsed.map((l) => l.type),
      ['snapshot_begin', 'keys', 'snapshot_end'],
    );
    t.same(
      parsed[1].keys.map((k: SnapshotKey) => k.id),
      ['key_7', 'key_1', 'key_5', 'key_2'],
    );
    const digest = new SnapshotDigest();
    for (const line of lines.slice(0, -1)) digest.update(line);
    const expected = digest.digest();
    t.same([parsed[2].version, parsed[2].sha256, sha256], [version, expected, expected]);
  });
});
