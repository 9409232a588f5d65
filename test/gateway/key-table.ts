// The open-addressing tables behind the key set: growth far past the initial size, deletion
// inside long and wrapped-around probe clusters followed by reinsertion (no tombstones, every
// survivor still found), and a seeded random run of SlotTable against a Map.
import t from 'tap';
import { createHash } from 'node:crypto';
import { KeyTable } from '../../gateway/state/key-table';
import { SlotTable } from '../../gateway/state/slot-table';
import type { SnapshotKey } from '../../protocol/snapshot';

const NOW = 1_700_000_000_000;
const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');

function plain(id: string, hash: string): SnapshotKey {
  return { id, secrets: [{ hash, expires_at: null }], expires_at: null, endpoints: [], limit: null, lift: null };
}

/** A 64-hex-digit "digest" whose first four bytes (the slot hash) are `prefix`. */
const withPrefix = (prefix: string, i: number) => prefix + hashOf(`${prefix}/${i}`).slice(prefix.length);

/** Ids of the keys `hashes` resolve to (null when not found). */
const ids = (table: KeyTable, hashes: string[]) => hashes.map((h) => table.lookupHex(h, NOW)?.id ?? null);

function mismatches(table: KeyTable, expected: Map<string, string | null>): string[] {
  const wrong: string[] = [];
  for (const [hash, id] of expected) {
    const got = table.lookupHex(hash, NOW)?.id ?? null;
    if (got !== id) wrong.push(`${hash.slice(0, 12)}…: ${got} instead of ${id}`);
  }
  return wrong;
}

t.test('grows from empty to 50,000 keys; removals and re-adds keep every lookup right', async (t) => {
  const table = new KeyTable();
  const expected = new Map<string, string | null>();
  const N = 50_000;
  const refused: string[] = [];
  for (let i = 0; i < N; i++) {
    const hash = hashOf(`grow-${i}`);
    const why = table.add(plain(`key_${i}`, hash));
    if (why !== null) refused.push(why);
    expected.set(hash, `key_${i}`);
  }
  t.same(refused, []);
  t.equal(table.size, N);
  t.same(mismatches(table, expected), [], 'all found after growth');
  let removed = 0;
  for (let i = 0; i < N; i += 3) {
    if (table.remove(`key_${i}`)) removed++;
    expected.set(hashOf(`grow-${i}`), null);
  }
  t.equal(removed, Math.ceil(N / 3));
  t.equal(table.remove('key_0'), false, 'removing twice');
  for (let i = 0; i < N; i += 6) {
    const hash = hashOf(`again-${i}`);
    const why = table.add(plain(`key_${i}`, hash));
    if (why !== null) refused.push(why);
    expected.set(hash, `key_${i}`);
  }
  t.same(refused, []);
  t.equal(table.size, N - Math.ceil(N / 3) + Math.ceil(N / 6));
  t.same(mismatches(table, expected), [], 'all found after removals and re-adds');
  t.equal([...expected.values()].filter((id) => id !== null).length, table.size, 'one secret per key held');
  t.same(ids(table, [hashOf('grow-nope'), hashOf('again-1')]), [null, null]);
});

t.test('deleting inside one long probe cluster, including one that wraps around the end', async (t) => {
  // Equal first words share a home slot; all-ones is the last slot, zero the first, so the
  // cluster starting at the end continues at slot 0 and mixes with keys homed there.
  const table = new KeyTable(64);
  const expected = new Map<string, string | null>();
  const hashes: string[] = [];
  for (let i = 0; i < 40; i++) hashes.push(withPrefix('ffffffff', i), withPrefix('00000000', i), withPrefix('00000001', i));
  hashes.forEach((hash, i) => {
    table.add(plain(`key_${i}`, hash));
    expected.set(hash, `key_${i}`);
  });
  t.same(mismatches(table, expected), []);
  // Remove from the front, middle and end of the cluster, then put new keys back in.
  for (const i of [0, 1, 2, 3, 50, 51, 60, 90, 117, 118, 119]) {
    t.equal(table.remove(`key_${i}`), true);
    expected.set(hashes[i]!, null);
    t.same(mismatches(table, expected), [], `after removing key_${i}`);
  }
  for (const i of [0, 2, 51, 119]) {
    const hash = withPrefix(i % 2 ? 'ffffffff' : '00000000', 1000 + i);
    t.equal(table.add(plain(`key_${i}`, hash)), null);
    expected.set(hash, `key_${i}`);
  }
  t.same(mismatches(table, expected), [], 'after putting keys back');
  t.equal(table.size, 120 - 11 + 4);
});

t.test('a side key releases all its records; the slots are reused', async (t) => {
  const table = new KeyTable();
  const rotated: SnapshotKey = {
    ...plain('key_rot', hashOf('old')),
    secrets: [
      { hash: hashOf('old'), expires_at: NOW + 5 },
      { hash: hashOf('new'), expires_at: null },
    ],
  };
  for (let round = 0; round < 3; round++) {
    t.equal(table.add(rotated), null);
    t.equal(table.add(plain('key_plain', hashOf('plain'))), null);
    t.same(ids(table, [hashOf('old'), hashOf('new'), hashOf('plain')]), ['key_rot', 'key_rot', 'key_plain']);
    const owners = () => ['old', 'new', 'plain'].map((secret) => table.ownerOf(hashOf(secret)));
    t.same([table.size, ...owners()], [2, 'key_rot', 'key_rot', 'key_plain'], 'two keys, three secrets');
    table.remove('key_rot');
    table.remove('key_plain');
    t.same(ids(table, [hashOf('old'), hashOf('new'), hashOf('plain')]), [null, null, null]);
    t.same([table.size, ...owners()], [0, null, null, null], 'no key and no secret left');
  }
});

t.test('SlotTable against a Map: random inserts and removes over few hashes', async (t) => {
  let seed = 42;
  const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const slots = new SlotTable();
  const model = new Map<number, number>(); // ref → hash
  const find = (hash: number, ref: number) => {
    for (let s = slots.first(hash); s !== -1; s = slots.next(s, hash)) if (slots.ref(s) === ref) return true;
    return false;
  };
  let nextRef = 0;
  for (let step = 0; step < 20_000; step++) {
    if (model.size === 0 || random() < 0.55) {
      // Few distinct hashes, some at the top of the range: long clusters that wrap.
      const hash = random() < 0.5 ? Math.floor(random() * 8) : 0xffffffff - Math.floor(random() * 8);
      slots.insert(hash, nextRef);
      model.set(nextRef++, hash);
    } else {
      const refs = [...model.keys()];
      const ref = refs[Math.floor(random() * refs.length)]!;
      if (!slots.remove(model.get(ref)!, ref)) t.bailout(`step ${step}: remove found nothing`);
      model.delete(ref);
    }
    if (step % 97 === 0) {
      const lost = [...model].filter(([ref, hash]) => !find(hash, ref));
      if (lost.length > 0) t.bailout(`step ${step}: lost ${lost.length} entries`);
    }
  }
  t.equal(slots.size, model.size);
  t.same(
    [...model].filter(([ref, hash]) => !find(hash, ref)),
    [],
    'every held entry is found',
  );
  t.equal(slots.remove(3, 1e9), false, 'removing an absent entry');
  t.ok(slots.capacity * 0.75 >= slots.size, 'at most 3/4 full');
});
