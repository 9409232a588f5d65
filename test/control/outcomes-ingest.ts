/**
 * Outcome ingest in chunks (`control/store/sql/outcomes.ts`): whatever mix of new rows, replays
 * and repeated call ids a batch holds, and wherever they fall against the chunk boundaries,
 * the table ends up holding each call once (as first received), `ingest` counts exactly the
 * new ones, and the rollups count each call once. A row the database refuses undoes the whole
 * batch. Batches ingested at the same time (PostgreSQL runs them side by side) all commit, even
 * when they share calls and rollup minutes in different orders, and count each call once. On
 * every store.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { CHUNK_ROWS } from '../../control/store/outcomes';
import { LATENCY_BOUNDS_MS, MINUTE_MS, rollupGroups } from '../../control/store/rollups';
import { OUTCOMES, UNRATED_OUTCOMES, type OutcomeRecord } from '../../protocol/outcome';
import { forEachStore, openTestStore, type StoreKind } from '../fixtures/stores';

const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);

function record(i: number): OutcomeRecord {
  const outcome = OUTCOMES[i % OUTCOMES.length]!;
  return {
    call_id: randomUUID(),
    key_id: i % 5 === 0 ? null : `key_${i % 3}`,
    endpoint_id: i % 4 === 0 ? 'a' : 'b',
    method: 'POST',
    status: outcome === 'server_error' ? 500 : 200,
    outcome,
    latency_ms: (i * 37) % 900,
    started_at: new Date(T0 + (i % 5) * 60_000 + i).toISOString(),
    gateway_id: `gw-${i % 2}`,
  };
}

/** A deterministic pseudo-random sequence (the same batches on every run). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0) / 2 ** 32;
}

t.test('batches of new rows, replays and repeats across chunk boundaries store each call once', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const rand = lcg(7);
    const made: OutcomeRecord[] = [];
    /** call id → received_at of its first ingest (the model). */
    const model = new Map<string, { r: OutcomeRecord; at: number }>();
    const sizes = [0, 1, CHUNK_ROWS - 1, CHUNK_ROWS, CHUNK_ROWS + 1, 2 * CHUNK_ROWS, 3 * CHUNK_ROWS + 17, 5 * CHUNK_ROWS];
    let at = T0 + 3_600_000;
    let batches = 0;
    for (let round = 0; round < 6; round++) {
      for (const size of sizes) {
        const batch: OutcomeRecord[] = [];
        const replayShare = round === 0 ? 0 : [0, 0.01, 0.3, 1][round % 4]!;
        for (let n = 0; n < size; n++) {
          const roll = rand();
          if (made.length > 0 && roll < replayShare) batch.push(made[Math.floor(rand() * made.length)]!);
          else if (batch.length > 0 && roll > 0.995)
            batch.push(batch[Math.floor(rand() * batch.length)]!); // repeated in this batch
          else {
            const r = record(made.length);
            made.push(r);
            batch.push(r);
          }
        }
        at += 1;
        let fresh = 0;
        for (const r of batch) {
          if (model.has(r.call_id)) continue;
          model.set(r.call_id, { r, at });
          fresh++;
        }
        const accepted = await store.outcomes.ingest(batch, at);
        batches++;
        if (accepted !== fresh) t.equal(accepted, fresh, `batch ${batches} (${size} rows, replay share ${replayShare}): new rows counted`);
      }
    }
    t.pass(`${batches} batches counted their new rows exactly`);
    t.equal(await store.outcomes.count(), model.size, 'one row per call');
    t.equal((await store.settlement.backlog()).count, model.size, 'and one entry per call in the settler queue, replays or not');

    // One row per call (counted above), so reading each call's row reads every row.
    let mismatched = 0;
    for (const want of model.values()) {
      const r = want.r;
      const row = await store.outcomes.byCallId(r.call_id);
      const same =
        row !== undefined &&
        row.key_id === r.key_id &&
        row.endpoint_id === r.endpoint_id &&
        row.method === r.method &&
        row.status === r.status &&
        row.outcome === r.outcome &&
        row.latency_ms === r.latency_ms &&
        row.started_at === Date.parse(r.started_at) &&
        row.gateway_id === r.gateway_id &&
        row.received_at === want.at;
      if (!same && mismatched++ === 0) t.fail('row differs from the call as first received', { row, want });
    }
    t.equal(mismatched, 0, 'every stored row is the call as first received');

    // The rollups: each call counted once, in its endpoint's window.
    for (const endpoint of ['a', 'b']) {
      const calls = [...model.values()].map((m) => m.r).filter((r) => r.endpoint_id === endpoint);
      const window = (await store.rollups.window(T0 - 60_000)).find((w) => w.endpoint_id === endpoint)!;
      for (const outcome of OUTCOMES) {
        t.equal(window.counts[outcome], calls.filter((r) => r.outcome === outcome).length, `${endpoint}: ${outcome} counted once per call`);
      }
      const rated = calls.filter((r) => !UNRATED_OUTCOMES.has(r.outcome)).length;
      t.equal(
        window.latency.reduce((a, b) => a + b, 0),
        rated,
        `${endpoint}: one latency sample per rated call`,
      );
    }
  });
});

/** How each store words a refused row: a broken CHECK, a value of the wrong type. */
const REFUSED: Record<StoreKind, { check: RegExp; type: RegExp }> = {
  sqlite: { check: /CHECK constraint failed/, type: /cannot store TEXT value in INTEGER column/ },
  postgres: { check: /violates check constraint "outcome_records_outcome_check"/, type: /invalid input syntax for type bigint/ },
};

t.test('the rollups of a batch are its rows grouped by endpoint and minute, on every bucket edge', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const latencies = [0, ...LATENCY_BOUNDS_MS.flatMap((b) => [b - 1, b, b + 1]), 86_400_000];
    const rows: OutcomeRecord[] = [];
    for (const [o, outcome] of OUTCOMES.entries())
      for (const [l, latency_ms] of latencies.entries())
        rows.push({
          ...record(rows.length),
          outcome,
          latency_ms,
          endpoint_id: `ep-${(o + l) % 3}`,
          // Minutes on both sides of an edge, and a millisecond before and after it.
          started_at: new Date(T0 + ((o * 7 + l) % 4) * MINUTE_MS + (l % 3 === 0 ? -1 : 0)).toISOString(),
        });
    t.equal(await store.outcomes.ingest(rows, T0), rows.length);
    const minutes = rollupGroups(rows.map((r) => ({ ...r, started_ms: Date.parse(r.started_at) })));
    t.ok(new Set(minutes.map((g) => g.minute)).size >= 4, 'the batch spans several minutes');
    for (const from of [T0 - MINUTE_MS, T0, T0 + 2 * MINUTE_MS]) {
      const expected = new Map<string, number[]>();
      for (const g of minutes.filter((g) => g.minute * MINUTE_MS >= from)) {
        const sums = expected.get(g.endpoint_id) ?? new Array<number>(g.counts.length).fill(0);
        g.counts.forEach((n, i) => (sums[i] = sums[i]! + n));
        expected.set(g.endpoint_id, sums);
      }
      const got = new Map(
        (await store.rollups.window(from)).map((w) => [w.endpoint_id, [...OUTCOMES.map((o) => w.counts[o]), ...w.latency]]),
      );
      t.same(got, expected, `the window from minute ${(from - T0) / MINUTE_MS}: counts and histogram as rollupGroups makes them`);
    }
  });
});

t.test('a row the database refuses undoes the whole batch, chunked or not', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const before = await store.outcomes.ingest(
      Array.from({ length: CHUNK_ROWS }, (_, i) => record(i)),
      T0,
    );
    t.equal(before, CHUNK_ROWS);
    const rollups = JSON.stringify(await store.rollups.window(T0 - 60_000));
    for (const where of [5, CHUNK_ROWS + 5, 2 * CHUNK_ROWS + 3]) {
      const batch = Array.from({ length: 2 * CHUNK_ROWS + 10 }, (_, i) => record(i));
      // Past the wire schema's check, only the table's constraints can refuse it.
      batch[where] = { ...batch[where]!, outcome: 'not_an_outcome' as OutcomeRecord['outcome'] };
      await t.rejects(store.outcomes.ingest(batch, T0 + 1), REFUSED[kind].check, `refused row at ${where}`);
      batch[where] = { ...batch[where], outcome: 'ok', status: 'two hundred' as unknown as number };
      await t.rejects(store.outcomes.ingest(batch, T0 + 1), REFUSED[kind].type, `mistyped row at ${where}`);
      t.equal(await store.outcomes.count(), CHUNK_ROWS, `row at ${where}: nothing of the batch stored`);
      t.equal(JSON.stringify(await store.rollups.window(T0 - 60_000)), rollups, `row at ${where}: rollups unchanged`);
    }
  });
});

t.test('a call id twice in one batch is stored once, as first received', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    for (const size of [3, CHUNK_ROWS, 2 * CHUNK_ROWS + 1]) {
      const batch = Array.from({ length: size }, (_, i) => record(i));
      const first = batch[size - 1]!;
      // The same call again, from another gateway with another outcome, before the first and after it.
      batch.splice(1, 0, { ...first, call_id: batch[0]!.call_id, endpoint_id: 'c', outcome: 'server_error', gateway_id: 'gw-x' });
      batch.push({ ...first, endpoint_id: 'c', outcome: 'network_error', gateway_id: 'gw-y' });
      t.equal(await store.outcomes.ingest(batch, T0), size, `${size} calls: each counted once`);
      t.match(
        await store.outcomes.byCallId(batch[0]!.call_id),
        { endpoint_id: batch[0]!.endpoint_id, outcome: batch[0]!.outcome, gateway_id: batch[0]!.gateway_id },
        `${size} calls: a call repeated right after it is stored as first received`,
      );
      t.match(
        await store.outcomes.byCallId(first.call_id),
        { endpoint_id: first.endpoint_id, outcome: first.outcome, gateway_id: first.gateway_id },
        `${size} calls: a call repeated at the end is stored as first received`,
      );
    }
    t.notOk(
      (await store.rollups.window(T0 - 60_000)).some((w) => w.endpoint_id === 'c'),
      'the repeats never reach the rollups',
    );
  });
});

t.test('batches ingested at once, sharing calls and minutes in any order, all commit and count each call once', async (t) => {
  forEachStore(t, async (t, kind) => {
    const store = await openTestStore(t, kind);
    const rand = lcg(11);
    const shuffled = <T>(xs: T[]): T[] => {
      const out = [...xs];
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out;
    };
    const seen = new Set<string>();
    const calls: OutcomeRecord[] = [];
    for (let round = 0; round < 6; round++) {
      // Calls every batch of the round holds (a shipper's retries), in each batch's own order,
      // and calls of one batch only; all of them over the same hour of endpoint-minutes.
      const make = (i: number): OutcomeRecord => ({ ...record(i), started_at: new Date(T0 + (i % 60) * 60_000 + i).toISOString() });
      const shared = Array.from({ length: round % 2 === 0 ? 300 : 0 }, (_, i) => make(calls.length + i));
      calls.push(...shared);
      const batches = Array.from({ length: 8 }, () => {
        const own = Array.from({ length: 300 }, (_, i) => make(calls.length + i));
        calls.push(...own);
        return shuffled([...shared, ...own]);
      });
      const accepted = await Promise.all(batches.map((batch, i) => store.outcomes.ingest(batch, T0 + round * 10 + i)));
      const fresh = calls.filter((r) => !seen.has(r.call_id));
      for (const r of fresh) seen.add(r.call_id);
      t.equal(
        accepted.reduce((a, b) => a + b, 0),
        fresh.length,
        `round ${round}: every call counted by exactly one batch`,
      );
    }
    t.equal(await store.outcomes.count(), calls.length, 'one row per call');
    const windows = await store.rollups.window(T0 - 60_000);
    for (const endpoint of ['a', 'b']) {
      const counts = windows.find((w) => w.endpoint_id === endpoint)!.counts;
      t.equal(
        Object.values(counts).reduce((a, b) => a + b, 0),
        calls.filter((r) => r.endpoint_id === endpoint).length,
        `${endpoint}: each call in the rollups once`,
      );
    }
  });
});
