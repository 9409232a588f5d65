/**
 * Whether the gateway covers the calls it admits (gateway/state/coverage.ts): every call before
 * any line; while covered, a keyed call while the allowance holds its price + premium beside the
 * calls under way and the failures counted, then none; a call that ends well gives its part
 * back, a covered failure keeps it; `covered: false` covers nothing; a line that does not parse
 * changes nothing.
 *
 * A failure stays counted until control has provably seen it: its record acked with a number by
 * a control process, and a line after an `ingested` line of that process with that number or
 * more. Not before the ack, not with a lower number, however long it takes (shipping that lags
 * more than CARRY_MS too). Acked by another process (a failover), with no number, or set aside:
 * proven by a line CARRY_MS after the ack. Proven, it counts for as long again as its proof
 * took (CARRY_MS to CARRY_MAX_MS), for the other gateways. Lines with no `ingested` line (an
 * older control): a new line restarts the count but keeps the failures of the last CARRY_MS
 * counted, and those only for CARRY_MS.
 */
import t, { type Test } from 'tap';
import { CARRY_MAX_MS, CARRY_MS, Coverage } from '../../gateway/state/coverage';
import type { OutcomeAck } from '../../protocol/outcome';
import type { IngestedLine } from '../../protocol/snapshot';
import { manualClock } from '../fixtures/control';

/** One covered call's price + premium. */
const CALL = 1_100;
const line = (allowance: number, covered = true) => ({ type: 'coverage', covered, allowance });
/** The control process whose lines the gateway gets, and another (the one before a failover). */
const X = 'ctl-x';
const Y = 'ctl-y';
const seen = (seq: number, instance = X): IngestedLine => ({ type: 'ingested', instance, seq });
const ack = (seq: number, instance = X): OutcomeAck => ({ accepted: 1, duplicates: 0, ingest_seq: seq, ingest_instance: instance });
/** An older control's answer: no number. */
const plainAck: OutcomeAck = { accepted: 1, duplicates: 0 };
const id = (n: number) => `0190a1b2-c3d4-7e5f-8a6b-${String(n).padStart(12, '0')}`;

/** A covered call admitted and failed as call `n`. */
function fail(t: Test, c: Coverage, n: number): void {
  t.equal(c.admit(CALL), true, `call ${n} is covered`);
  c.end(CALL, true, id(n));
}

t.test('before any line every call is covered, and nothing is held', async (t) => {
  const c = new Coverage();
  t.equal(c.state, null);
  for (let i = 0; i < 100; i++) t.equal(c.admit(CALL), true);
  for (let i = 0; i < 100; i++) c.end(CALL, true);
  t.equal(c.admit(CALL), true, 'failures before any line spend nothing');
  t.equal(c.state, null);
});

t.test('a covered line admits while allowance − in flight − spent holds the call, then uncovered', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  t.equal(c.apply(line(3 * CALL + 99)), true);
  t.same(c.state, { covered: true, allowance: 3 * CALL + 99, held: 0, received_at: new Date(clock.now()).toISOString() });
  t.same(
    [c.admit(CALL), c.admit(CALL), c.admit(CALL), c.admit(CALL)],
    [true, true, true, false],
    'three in flight fill it; the fourth does not fit in the 99 left',
  );
  t.equal(c.state!.held, 3 * CALL);
  t.equal(c.admit(99), true, 'a smaller call fits exactly');
  t.equal(c.admit(1), false, 'and then nothing does');

  c.end(CALL, false);
  t.equal(c.state!.held, 2 * CALL + 99, 'a call that did not fail gives its part back');
  t.equal(c.admit(CALL), true, 'which the next call takes');
  c.end(CALL, true);
  t.equal(c.state!.held, 3 * CALL + 99, 'a covered failure keeps its part spent');
  t.equal(c.admit(CALL), false);
  c.end(CALL, true);
  c.end(CALL, true);
  c.end(99, false);
  t.equal(c.state!.held, 3 * CALL, 'three failures spent');
  t.equal(c.admit(CALL), false, 'the allowance is spent');
  t.equal(c.admit(99), true, 'only 99 is left');
  c.end(99, false);
});

t.test('amount 0 is covered while covered, and holds nothing', async (t) => {
  const c = new Coverage();
  c.apply(line(0));
  t.equal(c.admit(0), true, 'an allowance of 0 still covers a call that could cost nothing');
  t.equal(c.admit(1), false);
  c.end(0, true);
  t.equal(c.state!.held, 0, 'its end changes nothing');
  c.apply(line(5_000, false));
  t.equal(c.admit(0), false, 'paused: not even a free call is covered');
});

t.test('covered: false: every call uncovered, whatever the allowance', async (t) => {
  const c = new Coverage();
  c.apply(line(1_000_000, false));
  t.equal(c.admit(CALL), false);
  t.equal(c.admit(1), false);
  t.match(c.state, { covered: false, allowance: 1_000_000, held: 0 });
  c.apply(line(1_000_000));
  t.equal(c.admit(CALL), true, 'a covered line covers again');
});

t.test(
  'an older control (no ingested lines, no numbers): a new line restarts the count, carrying the failures of the last CARRY_MS',
  async (t) => {
    const clock = manualClock();
    const c = new Coverage(clock.now);
    c.apply(line(10 * CALL));
    // Two failures long ago, three recent ones, one call still under way.
    for (let i = 0; i < 6; i++) t.equal(c.admit(CALL), true);
    c.end(CALL, true);
    c.end(CALL, true);
    clock.advance(CARRY_MS + 1);
    c.end(CALL, true);
    c.end(CALL, true);
    c.end(CALL, true);
    t.equal(c.state!.held, 6 * CALL);

    clock.advance(1_000);
    t.equal(c.apply(line(4 * CALL)), true);
    t.match(c.state, { allowance: 4 * CALL, held: 4 * CALL }, 'the three recent failures and the call under way; the old two are gone');
    t.equal(c.admit(CALL), false, 'nothing left of the new allowance');
    c.end(CALL, false);
    t.equal(c.state!.held, 3 * CALL, 'the call that was under way gives its part back to the new line');
    t.equal(c.admit(CALL), true);
    c.end(CALL, false);

    // The carried failures stop counting CARRY_MS after they were recorded: control has them by then.
    clock.advance(CARRY_MS);
    t.equal(c.state!.held, 0, 'the carried failures expired');
    t.equal(c.admit(4 * CALL), true, 'the whole allowance is there again');
    c.end(4 * CALL, false);
  },
);

t.test('an older control: failures since the line stay counted until the next line, however old', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  c.apply(line(2 * CALL));
  c.admit(CALL);
  c.end(CALL, true);
  clock.advance(10 * CARRY_MS);
  t.equal(c.state!.held, CALL, 'control has not said it saw it: it still counts');
  t.equal(c.admit(CALL), true);
  t.equal(c.admit(CALL), false);
  c.end(CALL, true);
  // The next line: control saw the second failure only; the first is older than CARRY_MS.
  clock.advance(1);
  c.apply(line(CALL));
  t.equal(c.state!.held, CALL, 'the failure of the last CARRY_MS is carried');
  t.equal(c.admit(CALL), false);
});

t.test('a line that does not parse changes nothing', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  for (const bad of [null, 'x', {}, { type: 'share', covered: true, allowance: 1 }, line(-1), line(1.5), { ...line(1), extra: 1 }]) {
    t.equal(c.apply(bad), false, `refused: ${JSON.stringify(bad)}`);
  }
  t.equal(c.state, null, 'still no line: every call covered');
  c.apply(line(CALL));
  t.equal(c.admit(CALL), true);
  const before = c.state;
  clock.advance(1_000);
  t.equal(c.apply({ type: 'coverage', covered: 'no', allowance: 0 }), false);
  t.equal(c.apply(line(0, 'false' as unknown as boolean)), false);
  t.same(c.state, before, 'the line, its time and what is held are unchanged');
  t.equal(c.admit(1), false, 'still spent by the call under way');
  c.end(CALL, false);
});

t.test('a failure stays counted until acked and reflected by a line of the same process with its number or more', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  c.apply(line(3 * CALL), seen(0));
  fail(t, c, 1);
  t.equal(c.waits, true, 'it waits for its ack');
  t.equal(c.state!.held, CALL);

  clock.advance(1_000);
  c.apply(line(3 * CALL), seen(0));
  t.equal(c.state!.held, CALL, 'a new line before the ack: still counted');

  c.acked([id(1)], ack(5));
  t.equal(c.waits, false);
  t.equal(c.state!.held, CALL, 'acked, but the line in force was evaluated before that commit');
  clock.advance(1_000);
  c.apply(line(3 * CALL), seen(4));
  t.equal(c.state!.held, CALL, 'a line whose evaluation had ingested up to 4, not 5: still counted');
  t.equal(c.admit(3 * CALL), false);

  clock.advance(1_000);
  c.apply(line(2 * CALL), seen(5));
  t.equal(c.state!.held, CALL, 'a line of the same process that had ingested 5 proves it, 3 s after it was recorded');
  // For the other gateways: CARRY_MS more than the longest proof lately (this one's 3 s).
  clock.advance(CARRY_MS + 3_000 - 1);
  t.equal(c.state!.held, CALL);
  t.equal(c.admit(2 * CALL), false);
  clock.advance(1);
  t.equal(c.state!.held, 0, 'then it counts no more: the allowance has it');
  t.equal(c.admit(2 * CALL), true, 'the whole (smaller) allowance');
  c.end(2 * CALL, false);
});

t.test('proven, a failure counts on for CARRY_MS more than the longest proof lately took, CARRY_MAX_MS at most', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  c.apply(line(10 * CALL), seen(0));
  fail(t, c, 1);
  clock.advance(2 * CARRY_MS);
  fail(t, c, 2);
  clock.advance(CARRY_MS);
  fail(t, c, 3);
  clock.advance(1);
  // Failure 1 took 3 × CARRY_MS to reach control, failure 2 CARRY_MS, failure 3 nothing: all count on alike.
  c.acked([id(1), id(2), id(3)], ack(1));
  c.apply(line(7 * CALL), seen(1));
  clock.advance(4 * CARRY_MS);
  t.equal(c.state!.held, 3 * CALL, 'all three proven, and counted CARRY_MS more than the longest proof');
  clock.advance(1);
  t.equal(c.state!.held, 0);

  fail(t, c, 4);
  clock.advance(10 * CARRY_MAX_MS);
  c.acked([id(4)], ack(2));
  c.apply(line(6 * CALL), seen(2));
  clock.advance(CARRY_MAX_MS - 1);
  t.equal(c.state!.held, CALL, 'a proof that took ten minutes: counted CARRY_MAX_MS more');
  clock.advance(1);
  t.equal(c.state!.held, 0, 'and no longer');
});

t.test('proven, a failure counts on while one recorded before its proof waits for its own, CARRY_MAX_MS at most', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  c.apply(line(10 * CALL), seen(0));
  fail(t, c, 1);
  clock.advance(1);
  fail(t, c, 2);
  clock.advance(1);
  // The batch of failure 2 reaches control first.
  c.acked([id(2)], ack(1));
  c.apply(line(9 * CALL), seen(1));
  clock.advance(10 * CARRY_MS);
  t.equal(c.state!.held, 2 * CALL, 'failure 2 is proven, but failure 1, older, still waits: the load may be rising');
  c.acked([id(1)], ack(2));
  c.apply(line(8 * CALL), seen(2));
  t.equal(c.state!.held, CALL, 'failure 1 proven: failure 2 goes at once');
  clock.advance(CARRY_MS + 10 * CARRY_MS + 2);
  t.equal(c.state!.held, 0, 'failure 1 CARRY_MS after the longest proof lately (its own)');

  // A failure that never reaches control holds the later ones CARRY_MAX_MS after their proof, no longer.
  fail(t, c, 3);
  clock.advance(1);
  fail(t, c, 4);
  c.acked([id(4)], ack(3));
  c.apply(line(8 * CALL), seen(3));
  clock.advance(CARRY_MAX_MS - 1);
  t.equal(c.state!.held, 2 * CALL);
  clock.advance(1);
  t.equal(c.state!.held, CALL, 'failure 4 gone; failure 3 counts until proven');
});

t.test('an ack the line in force already reflects proves the failure at once', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  c.apply(line(3 * CALL), seen(0));
  fail(t, c, 1);
  clock.advance(1);
  fail(t, c, 2);
  clock.advance(1);
  // The line comes on the stream before the ack comes back on the shipper's connection.
  c.apply(line(2 * CALL), seen(7));
  c.acked([id(2)], ack(7));
  c.acked([id(1)], ack(8));
  c.acked([id(1), id(99)], ack(6, X));
  t.equal(c.state!.held, 2 * CALL, 'both counted');
  clock.advance(CARRY_MS + 10);
  t.equal(c.state!.held, 2 * CALL, 'failure 2 proven at its ack, its time come, but failure 1 (acked with 8: not in the line) is older');
  c.apply(line(2 * CALL), seen(8));
  t.equal(c.state!.held, CALL, 'failure 1 proven (a second ack of it changed nothing): failure 2 goes');
});

t.test('shipping that lags more than CARRY_MS: the failures stay counted, line after line, until acked and reflected', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  c.apply(line(3 * CALL), seen(10));
  fail(t, c, 1);
  fail(t, c, 2);
  fail(t, c, 3);
  t.equal(c.admit(CALL), false, 'the allowance is spent');
  // Control has not ingested them: every line says the same free capital, for a long time.
  for (let i = 0; i < 6; i++) {
    clock.advance(CARRY_MS);
    c.apply(line(3 * CALL), seen(10 + i));
    t.equal(c.state!.held, 3 * CALL, `${(i + 1) * CARRY_MS} ms later: all three still counted`);
    t.equal(c.admit(CALL), false, 'and no call is covered');
  }
  // Shipped at last: acked with 17; the next line had ingested 17 and has them taken off.
  c.acked([id(1), id(2), id(3)], ack(17));
  c.apply(line(0), seen(17));
  clock.advance(CARRY_MS + 6 * CARRY_MS - 1);
  t.equal(c.state!.held, 3 * CALL, 'proven; counted CARRY_MS more than their proof took');
  clock.advance(1);
  t.equal(c.state!.held, 0);
  t.equal(c.admit(1), false, 'nothing is left of the pool');
});

t.test('acked by another control process (a failover): proven by a line CARRY_MS after the ack, or by one of that process', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  c.apply(line(4 * CALL), seen(3, Y));
  fail(t, c, 1);
  fail(t, c, 2);
  // Shipping lagged: the records were recorded long before Y acked them.
  clock.advance(3 * CARRY_MS);
  c.acked([id(1), id(2)], ack(9, Y));
  // The gateway moves to X, whose numbers say nothing of Y's.
  clock.advance(1_000);
  c.apply(line(4 * CALL), seen(50, X));
  t.equal(c.state!.held, 2 * CALL, "X's line 1 s after Y's ack: both counted, though recorded 16 s ago");
  clock.advance(CARRY_MS - 1_001);
  c.apply(line(4 * CALL), seen(51, X));
  t.equal(c.state!.held, 2 * CALL, 'a line just under CARRY_MS after the ack: still counted');
  clock.advance(1);
  t.equal(c.state!.held, 2 * CALL, 'time alone proves nothing');
  c.apply(line(2 * CALL), seen(52, X));
  clock.advance(CARRY_MAX_MS);
  t.equal(c.state!.held, 0, 'the first line CARRY_MS after the ack proved them');

  // Or a line of the acking process with the ack's number, before CARRY_MS.
  fail(t, c, 3);
  c.acked([id(3)], ack(4, Y));
  c.apply(line(2 * CALL), seen(60, X));
  clock.advance(CARRY_MAX_MS);
  t.equal(c.state!.held, CALL, "X's lines: counted");
  c.apply(line(CALL), seen(4, Y));
  clock.advance(CARRY_MAX_MS);
  t.equal(c.state!.held, 0, "Y's line that had ingested 4 proved it");
});

t.test(
  'an ack with no number (an older control), a record set aside, or an answer that proves nothing: proven by a line CARRY_MS after it',
  async (t) => {
    const clock = manualClock();
    const c = new Coverage(clock.now);
    const answers: (OutcomeAck | null)[] = [
      plainAck,
      null,
      { accepted: 1, duplicates: 0, ingest_seq: 3 },
      { ingest_instance: X } as OutcomeAck,
      { ingest_seq: 'x', ingest_instance: X } as unknown as OutcomeAck,
      { ingest_seq: 1.5, ingest_instance: X } as unknown as OutcomeAck,
      { ingest_seq: 0, ingest_instance: X } as unknown as OutcomeAck,
      7 as unknown as OutcomeAck,
    ];
    const n = answers.length;
    c.apply(line(n * CALL), seen(1));
    for (let i = 1; i <= n; i++) fail(t, c, i);
    clock.advance(3 * CARRY_MS);
    answers.forEach((answer, i) => c.acked([id(i + 1)], answer));
    t.equal(c.waits, false, 'each heard of');
    clock.advance(1_000);
    c.apply(line(n * CALL), seen(100));
    clock.advance(CARRY_MAX_MS);
    t.equal(c.state!.held, n * CALL, 'a line 1 s after the acks proves none, though they were recorded 16 s before');
    c.apply(line(n * CALL), seen(100));
    t.equal(c.state!.held, n * CALL, 'a line CARRY_MS after the acks proves them all: counted as long again');
    clock.advance(CARRY_MAX_MS);
    t.equal(c.state!.held, 0);
  },
);

t.test('before any line: every call covered; the failures of the last CARRY_MS need proof against a first line with a count', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  c.end(CALL, true, id(1));
  clock.advance(CARRY_MS);
  c.end(CALL, true, id(2));
  t.equal(c.admit(CALL), true, 'no line: covered');
  c.end(CALL, false);
  clock.advance(1_000);
  c.apply(line(3 * CALL), seen(2));
  t.equal(c.state!.held, CALL, 'the failure older than CARRY_MS is gone; the recent one counts');
  clock.advance(10 * CARRY_MS);
  t.equal(c.state!.held, CALL, 'and with a count, it waits for its proof');
  c.acked([id(1), id(2)], ack(3));
  c.apply(line(3 * CALL), seen(3));
  clock.advance(CARRY_MAX_MS);
  t.equal(c.state!.held, 0);
  t.equal(c.waits, false);
});

t.test(
  'an older control after a newer one: its lines prove nothing, and the failures count for CARRY_MS from when they were recorded',
  async (t) => {
    const clock = manualClock();
    const c = new Coverage(clock.now);
    c.apply(line(3 * CALL), seen(5));
    fail(t, c, 1);
    clock.advance(CARRY_MS + 1);
    fail(t, c, 2);
    c.apply(line(3 * CALL), null);
    t.equal(c.state!.held, CALL, 'the failure older than CARRY_MS is let go, the recent one carried');
    fail(t, c, 3);
    clock.advance(CARRY_MS);
    t.equal(c.state!.held, CALL, 'the carried one expired; the one since the line counts until the next');
    // Back on a control with a count: the failure since the older line waits for its proof.
    c.apply(line(3 * CALL), seen(9));
    clock.advance(CARRY_MAX_MS);
    t.equal(c.state!.held, CALL);
    t.equal(c.waits, true);
  },
);

t.test('many failures: proofs let go exactly those they reflect, in step, and the sums agree', async (t) => {
  const clock = manualClock();
  const c = new Coverage(clock.now);
  const n = 2_000;
  c.apply(line(n * CALL), seen(0));
  for (let i = 1; i <= n; i++) {
    fail(t, c, i);
    clock.advance(1);
  }
  t.equal(c.admit(1), false);
  // Batches of 100, numbered 1..20; the line had ingested up to 12.
  for (let b = 0; b < 20; b++)
    c.acked(
      Array.from({ length: 100 }, (_, i) => id(b * 100 + i + 1)),
      ack(b + 1),
    );
  c.apply(line(n * CALL), seen(12));
  clock.advance(10_000);
  t.equal(c.state!.held, n * CALL, 'the first 12 batches are proven, but the 8 others, recorded before that proof, still wait');
  c.apply(line(n * CALL), seen(20));
  t.equal(c.state!.held, 800 * CALL, 'all proven: the first 12 batches go, their time has come');
  // The longest proof: failure 1201's, recorded at 1.2 s and proven at 12 s.
  clock.advance(CARRY_MS + 10_800 - 1);
  t.equal(c.state!.held, 800 * CALL, 'the 8 others count CARRY_MS more than the longest proof');
  clock.advance(1);
  t.equal(c.state!.held, 0);
  t.equal(c.admit(n * CALL), true);
});
