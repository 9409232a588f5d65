/**
 * Whether the gateway covers the calls it admits (gateway/state/coverage.ts): every call before
 * any line; while covered, a keyed call while the allowance holds its price + premium beside the
 * calls under way and the failures counted, then none; a call that ends well gives its part
 * back, a covered failure keeps it; a new line restarts the count but keeps the failures of the
 * last CARRY_MS counted, and those only for CARRY_MS; `covered: false` covers nothing; a line
 * that does not parse changes nothing.
 */
import t from 'tap';
import { CARRY_MS, Coverage } from '../../gateway/state/coverage';
import { manualClock } from '../fixtures/control';

/** One covered call's price + premium. */
const CALL = 1_100;
const line = (allowance: number, covered = true) => ({ type: 'coverage', covered, allowance });

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

t.test('a new line restarts the count, carrying the failures of the last CARRY_MS', async (t) => {
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
});

t.test('failures since the line stay counted until the next line, however old', async (t) => {
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
