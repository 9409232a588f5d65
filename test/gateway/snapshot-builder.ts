// A full snapshot through `SnapshotBuilder`: keys lines become lookups, a line zod refuses is
// refused with zod's message, the fast line check never accepts what zod refuses, and a key
// id or secret listed twice, or a digest that does not match, rejects the snapshot.
import t from 'tap';
import { createHash } from 'node:crypto';
import { isKeysLine } from '../../gateway/state/key-line';
import { SnapshotBuilder, UpdateRejected } from '../../gateway/state/state';
import { SnapshotDigest, SnapshotKeys, type SnapshotKey } from '../../protocol/snapshot';
import { replacements, surplusMembers } from '../fixtures/mutations';

const NOW = 1_700_000_000_000;
const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');

function beginLine(keyCount: number): string {
  return JSON.stringify({
    type: 'snapshot_begin',
    version: 9,
    epoch: 1,
    generated_at: new Date(NOW).toISOString(),
    flags: { beta_gate_enabled: true, maintenance_mode: false },
    limits: { key: { count: 60, window_seconds: 60, burst: 10 }, ip: { count: 10, window_seconds: 60, burst: 5 } },
    endpoints: [],
    key_count: keyCount,
  });
}

function plain(i: number): SnapshotKey {
  return {
    id: `key_${String(i).padStart(8, '0')}`,
    secrets: [{ hash: hashOf(`s${i}`), expires_at: null }],
    expires_at: null,
    endpoints: [],
    limit: null,
    lift: null,
  };
}

/** Feed lines to a builder and finish it with the matching digest. */
function build(keyLines: SnapshotKey[][], keyCount = 0) {
  const begin = beginLine(keyCount);
  const digest = new SnapshotDigest();
  digest.update(begin);
  const builder = new SnapshotBuilder(begin);
  for (const keys of keyLines) {
    const line = JSON.stringify({ type: 'keys', keys });
    digest.update(line);
    builder.addKeysLine(line);
  }
  return builder.finish(9, digest.digest());
}

t.test('keys lines become lookups, whatever the announced count', async (t) => {
  const rotated: SnapshotKey = {
    ...plain(-1),
    secrets: [
      { hash: hashOf('old'), expires_at: NOW + 10 },
      { hash: hashOf('new'), expires_at: null },
    ],
    limit: { count: 3, window_seconds: 1 },
  };
  const lines = [Array.from({ length: 700 }, (_, i) => plain(i)), [rotated, ...Array.from({ length: 300 }, (_, i) => plain(700 + i))]];
  for (const announced of [0, 1001, 50]) {
    const state = build(lines, announced);
    t.equal(state.keyCount, 1001, `announced ${announced}`);
    t.equal(state.lookup(hashOf('s0'), NOW)?.id, 'key_00000000');
    t.equal(state.lookup(hashOf('s999'), NOW)?.id, 'key_00000999');
    t.same([state.lookup(hashOf('old'), NOW)?.id, state.lookup(hashOf('old'), NOW + 10)], [rotated.id, null]);
    t.same(state.lookup(hashOf('new'), NOW)?.limit, { count: 3, windowSeconds: 1 });
    t.equal(state.lookup(hashOf('s1000'), NOW), null);
  }
});

t.test('a key id or a secret listed twice rejects the snapshot', async (t) => {
  t.throws(() => build([[plain(1), plain(2)], [plain(1)]]), {
    name: 'UpdateRejected',
    message: /line 2: key key_00000001 is listed twice/,
  });
  const thief = { ...plain(3), secrets: plain(1).secrets };
  t.throws(() => build([[plain(1), thief]]), { message: /line 1: a secret of key key_00000003 already belongs to key key_00000001/ });
  const twice = { ...plain(4), secrets: [...plain(4).secrets, ...plain(4).secrets] };
  t.throws(() => build([[twice]]), { message: /lists a secret twice/ });
});

t.test('a line zod refuses is refused with its message; a wrong digest fails finish()', async (t) => {
  const builder = new SnapshotBuilder(beginLine(1));
  const bad = JSON.stringify({ type: 'keys', keys: [{ ...plain(1), secrets: [] }] });
  const zod = SnapshotKeys.safeParse(JSON.parse(bad));
  t.equal(zod.success, false);
  t.throws(() => builder.addKeysLine(bad), new UpdateRejected(`bad keys line 1: ${zod.error!.issues[0]!.message}`));
  t.throws(() => builder.addKeysLine('{"type":"keys",'), /not valid JSON/);
  builder.addKeysLine(JSON.stringify({ type: 'keys', keys: [plain(1)] }));
  t.throws(() => builder.finish(9, '0'.repeat(64)), /digest mismatch/);
});

t.test('the fast line check accepts only what SnapshotKeys accepts', async (t) => {
  const rich: SnapshotKey = {
    id: 'key_rich',
    secrets: [
      { hash: hashOf('a'), expires_at: NOW },
      { hash: hashOf('b'), expires_at: null },
    ],
    expires_at: NOW + 1,
    endpoints: ['echo'],
    limit: { count: 1, window_seconds: 1 },
    lift: { count: 2, window_seconds: 3, until: 0 },
  };
  const valid = {
    type: 'keys',
    keys: [plain(1), rich, { ...plain(2), account: 'acc_2' }, { ...rich, id: 'key_rich_acc', account: 'acc_r' }],
  };
  t.ok(isKeysLine(JSON.parse(JSON.stringify(valid))), 'ordinary lines take the fast path, keys with an account too');
  t.equal(isKeysLine({ type: 'keys', keys: [{ ...plain(3), account: 'a'.repeat(65) }] }), false, 'an account over 64 characters');
  t.equal(isKeysLine({ type: 'keys', keys: [{ ...plain(3), account: 7 }] }), false, 'an account that is not a string');
  t.ok(isKeysLine({ type: 'keys', keys: [] }));

  // Each mutation replaces one value somewhere in the line; the check must never say yes
  // where zod says no.
  const odd: unknown[] = [
    undefined,
    null,
    0,
    -1,
    1.5,
    2 ** 53,
    '',
    'x',
    'A'.repeat(64),
    'A'.repeat(65),
    hashOf('z').toUpperCase(),
    hashOf('z').slice(1),
    [],
    [1],
    {},
    { extra: 1 },
    true,
  ];
  let compared = 0;
  let fastAccepted = 0;
  for (const { copy, value, path } of replacements(valid, odd)) {
    const fast = isKeysLine(copy);
    const slow = SnapshotKeys.safeParse(copy).success;
    compared++;
    if (fast) fastAccepted++;
    if (fast && !slow) t.fail(`fast check accepted ${JSON.stringify(value)} at ${path.join('.')}`);
    if (slow !== fast && slow) t.comment(`zod alone accepts ${JSON.stringify(value)} at ${path.join('.')}`);
  }
  // zod strips unknown members of `limit` and `lift` instead of refusing them; the fast check
  // refuses them everywhere and leaves such a line to zod.
  for (const { copy, path } of surplusMembers(valid)) {
    t.equal(isKeysLine(copy), false, `an unknown member at ${path.join('.') || 'top'} leaves the line to zod`);
  }
  t.ok(compared > 500, `${compared} mutations compared`);
  t.ok(fastAccepted > 0, 'some mutations are still valid and take the fast path');
});
