/**
 * Two gateways' coverage (gateway/state/coverage.ts) against a simulated control, on one moved
 * clock: every covered call fails; each gateway ships its failures every 200 ms and control
 * commits a batch some time later (the lag), numbers it and acks it; every second control takes
 * its count, reads the free capital (a little later: the reads take time), divides it between
 * the two (control/sync/shares.ts `coverageAllowance`) and sends each its line after its
 * `ingested` line; coverage pauses while less than a call is free.
 *
 * However long and uneven the lag (both gateways under the same load: from a few hundred ms to
 * well over CARRY_MS), the two together cover exactly the failures the pool holds: never one
 * more, and, once the lag has passed, never one less.
 */
import t from 'tap';
import { coverageAllowance } from '../../control/sync/shares';
import { Coverage } from '../../gateway/state/coverage';
import { manualClock } from '../fixtures/control';

const CALL = 1_100;
const STEP_MS = 10;
const CONTROL = 'ctl-sim';

interface Scenario {
  name: string;
  /** Failures the pool holds. */
  pool: number;
  /**
   * The load: a batch's lag from its send to its commit, drawn every 10 s for both gateways
   * (each batch then 70 % to 130 % of it).
   */
  lag: [number, number];
  seed: number;
}

function simulate(s: Scenario): { covered: number; atEnd: number } {
  let seed = s.seed;
  const random = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const between = ([lo, hi]: [number, number]) => lo + random(hi - lo + 1);
  const clock = manualClock();
  const start = clock.now();
  const ids = ['gw-a', 'gw-b'];
  const members = ids.map((id) => ({ id, weight: 1 }));
  const gateways = ids.map(() => ({ coverage: new Coverage(clock.now), journal: [] as string[], busyUntil: 0, shipping: false }));
  let load = between(s.lag);
  // What happens later: a call's end, a batch's commit, an ack's or a line's arrival.
  const events: { at: number; run: () => void }[] = [];
  const later = (ms: number, run: () => void) => events.push({ at: clock.now() + ms, run });
  const committed = new Set<string>();
  let seq = 0;
  let covered = 0;
  let calls = 0;
  const evaluate = () => {
    const mark = seq;
    // The reads come a little after the count is taken: they may see more, never less.
    later(random(300), () => {
      const free = (s.pool - committed.size) * CALL;
      const paused = free < CALL;
      gateways.forEach((gw, i) => {
        const line = { type: 'coverage', covered: !paused, allowance: paused ? 0 : coverageAllowance(free, CALL, members, ids[i]!) };
        later(random(100), () => gw.coverage.apply(line, { type: 'ingested', instance: CONTROL, seq: mark }));
      });
    });
  };
  // One batch at a time, as the shipper sends them: the next after the answer to this one.
  const ship = (gw: (typeof gateways)[number]) => {
    if (gw.shipping || gw.journal.length === 0) return;
    const batch = gw.journal.splice(0);
    gw.shipping = true;
    later(Math.round((load * (70 + random(61))) / 100), () => {
      for (const id of batch) committed.add(id);
      const ack = { accepted: batch.length, duplicates: 0, ingest_seq: ++seq, ingest_instance: CONTROL };
      later(random(50), () => {
        gw.coverage.acked(batch, ack);
        gw.shipping = false;
      });
    });
  };
  const end = start + 120_000;
  while (clock.now() < end) {
    const now = clock.now();
    for (let i = events.length - 1; i >= 0; i--) {
      if (events[i]!.at <= now) {
        const { run } = events[i]!;
        events.splice(i, 1);
        run();
      }
    }
    if ((now - start) % 10_000 === 0) load = between(s.lag);
    if ((now - start) % 1_000 === 0) evaluate();
    for (const gw of gateways) {
      if ((now - start) % 200 === 0) ship(gw);
      // One call at a time per gateway, each 20 to 200 ms upstream; only covered ones matter.
      if (gw.busyUntil > now || !gw.coverage.admit(CALL)) continue;
      const id = `call-${++calls}`;
      covered++;
      const ms = between([20, 200]);
      gw.busyUntil = now + ms;
      later(ms, () => {
        gw.coverage.end(CALL, true, id);
        gw.journal.push(id);
      });
    }
    clock.advance(STEP_MS);
  }
  return { covered, atEnd: s.pool - committed.size };
}

const scenarios: Scenario[] = [
  { name: 'a light lag', pool: 21, lag: [100, 500], seed: 1 },
  { name: 'a light lag, a larger pool', pool: 200, lag: [50, 800], seed: 2 },
  { name: 'a lag around CARRY_MS', pool: 21, lag: [3_000, 7_000], seed: 3 },
  { name: 'a heavy lag', pool: 21, lag: [6_000, 9_000], seed: 4 },
  { name: 'a heavy, changing lag, a larger pool', pool: 120, lag: [500, 12_000], seed: 5 },
  { name: 'a load that comes and goes', pool: 60, lag: [0, 20_000], seed: 6 },
];

for (const s of scenarios) {
  t.test(`${s.name}: exactly the ${s.pool} failures the pool holds are covered`, async (t) => {
    const { covered, atEnd } = simulate(s);
    t.equal(covered, s.pool, `${covered} covered`);
    t.equal(atEnd, 0, 'control holds every one of them');
  });
}
