/**
 * Outcome ingest in chunks (`control/store/outcomes.ts`): whatever mix of new rows, replays
 * and repeated call ids a batch holds, and wherever they fall against the chunk boundaries,
 * the table ends up holding each call once (as first received), `ingest` counts exactly the
 * new ones, and the rollups count each call once. A row the database refuses undoes the whole
 * batch.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Store } from '../../control/store';
import { CHUNK_ROWS } from '../../control/store/outcomes';
import { OUTCOMES, UNRATED_OUTCOMES, type OutcomeRecord } from '../../protocol/outcome';

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
  const store = await Store.open(join(t.testdir(), 'control.db'));
  t.teardown(() => store.close());
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

t.test('a row the database refuses undoes the whole batch, chunked or not', async (t) => {
  const store = await Store.open(join(t.testdir(), 'control.db'));
  t.teardown(() => store.close());
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
    await t.rejects(store.outcomes.ingest(batch, T0 + 1), /CHECK constraint failed/, `refused row at ${where}`);
    batch[where] = { ...batch[where], outcome: 'ok', status: 'two hundred' as unknown as number };
    await t.rejects(store.outcomes.ingest(batch, T0 + 1), /cannot store TEXT value in INTEGER column/, `mistyped row at ${where}`);
    t.equal(await store.outcomes.count(), CHUNK_ROWS, `row at ${where}: nothing of the batch stored`);
    t.equal(JSON.stringify(await store.rollups.window(T0 - 60_000)), rollups, `row at ${where}: rollups unchanged`);
  }
});
