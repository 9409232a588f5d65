/**
 * The flag list has one home (`FLAG_NAMES`): the snapshot schema takes exactly those flags,
 * a flag without a stored row is off, rows naming no flag are ignored, and a full snapshot
 * and a delta carry the same flag values.
 */
import t from 'tap';
import { SnapshotCache, buildDelta, writeSnapshot } from '../../control/sync/snapshot';
import { FLAG_NAMES } from '../../protocol/admin';
import { Delta, Flags, flagsOf } from '../../protocol/snapshot';
import { forEachStore, openTestStore } from '../fixtures/stores';

const NOW = 1_700_000_000_000;
const LIMITS = { key: { count: 60, window_seconds: 60, burst: 10 }, ip: { count: 10, window_seconds: 60, burst: 5 } };

t.test('the snapshot schema has one boolean per name in FLAG_NAMES, no more', async (t) => {
  const allOff = Object.fromEntries(FLAG_NAMES.map((name) => [name, false]));
  t.same(Object.keys(Flags.shape).sort(), [...FLAG_NAMES].sort());
  t.ok(Flags.safeParse(allOff).success, 'every flag present: accepted');
  for (const name of FLAG_NAMES) {
    const { [name]: _left, ...missing } = allOff;
    t.notOk(Flags.safeParse(missing).success, `${name} missing: refused`);
  }
  t.notOk(Flags.safeParse({ ...allOff, surprise_flag: true }).success, 'an unknown flag: refused');
});

t.test('flagsOf: every flag, off without a row, unknown names ignored', async (t) => {
  t.same(flagsOf([]), Object.fromEntries(FLAG_NAMES.map((name) => [name, false])), 'no rows: all off');
  const [first, ...rest] = FLAG_NAMES;
  const on = flagsOf([
    { name: first, value: 1 },
    { name: 'toString', value: 1 },
    { name: 'surprise_flag', value: 1 },
  ]);
  t.same(Object.keys(on).sort(), [...FLAG_NAMES].sort(), 'only known flags');
  t.equal(on[first], true, 'value 1 is on');
  for (const name of rest) t.equal(on[name], false, `${name} stays off`);
  t.equal(flagsOf([{ name: first, value: true }])[first], true, 'true is on');
  t.equal(flagsOf([{ name: first, value: 0 }])[first], false, '0 is off');
});

t.test('a full snapshot and a delta carry the same flag values', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const base = await store.version();
    const name = FLAG_NAMES[FLAG_NAMES.length - 1]!;
    await store.mutate(
      { actor: 'test', now: NOW },
      { action: 'flags.set', target: name, changes: [{ kind: 'flags', entity: '*' }] },
      (tx) => tx.flags.set(name, true, NOW, 'test', null),
    );
    const lines: string[] = [];
    await writeSnapshot(store, LIMITS, NOW, async (line) => void lines.push(line), 0);
    const full = JSON.parse(lines[0]!) as { flags: Flags };
    const delta = Delta.parse(JSON.parse((await buildDelta(store, LIMITS, base, NOW))!.line));
    t.equal(full.flags[name], true, 'the snapshot has the flag on');
    t.same(delta.flags, full.flags, 'the delta has the same values');
    t.same(await store.flags.values(), full.flags, 'and so does the store');
  });
});

t.test("a shared snapshot's version and digest are known before its end line is written", async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const cache = new SnapshotCache(store, LIMITS, 0, 'control-test');
    // Two receivers of one build, each checking when it learns the digest.
    const receive = async () => {
      const lines: string[] = [];
      let known: { version: number; sha256: string } | null = null;
      let knownBeforeEnd = false;
      const result = await cache.stream(
        1,
        NOW,
        async (chunk) => {
          const line = chunk.toString();
          if (line.includes('"snapshot_end"')) knownBeforeEnd = known !== null;
          lines.push(line);
        },
        (r) => (known = r),
      );
      return { lines, known, knownBeforeEnd, result };
    };
    const [a, b] = await Promise.all([receive(), receive()]);
    for (const r of [a, b]) {
      t.ok(r.knownBeforeEnd, 'told before the end line was written');
      t.same(
        { ...(r.known as { version: number; sha256: string } | null), source: 'built' },
        r.result,
        'the version and digest the stream answers, of a snapshot this control built',
      );
      t.match(JSON.parse(r.lines[r.lines.length - 1]!), { type: 'snapshot_end', version: r.result.version, sha256: r.result.sha256 });
    }
    t.same(a.lines, b.lines, 'the same lines to both');
  });
});
