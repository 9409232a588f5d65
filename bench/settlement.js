#!/usr/bin/env node
'use strict';
/**
 * `npm run bench:settlement`: how fast control takes in outcomes and settles them, on the
 * built code (`dist/`), against a fresh database in a temp dir with the store's real
 * durability settings (WAL, synchronous=FULL).
 *
 * 1. ingest: BENCH_SETTLE_CALLS outcomes (default 1,000,000) through `store.outcomes.ingest`
 *    in batches of 5,000 (what `POST /_sync/v1/outcomes` runs per gateway batch).
 * 2. ingest over HTTP: BENCH_HTTP_CALLS (default 200,000) through a real control's
 *    `POST /_sync/v1/outcomes` (in this process), batches of 5,000, 4 in flight.
 * 3. settle: all of step 1's outcomes (10 endpoints, 1,000 keys, a realistic outcome mix) with
 *    the settler's `runOnce()`, at batch caps BENCH_SETTLE_CAPS (default "10000,1000"; the
 *    config default is 1,000). Each run gets its own copy of the database, settled without
 *    receipts (the store's bench-only `receipts: false`) or with a signed receipt per batch,
 *    side by side in alternating order, BENCH_SETTLE_ROUNDS times each (default 2; the best
 *    of each is reported, every run is printed). Then `ledger verify` (receipt checks
 *    included) and, on a copy settled without receipts, the backfill a store runs on open
 *    (what migration 9 costs an existing install).
 * 4. proofs: on the last cap's settled copy (1M settled calls by default), BENCH_PROOFS
 *    (default 20,000) inclusion proofs of random calls through `store.receipts.proof`, then
 *    BENCH_HTTP_PROOFS (default 2,000) through a real control's indexer
 *    (`GET /api/calls/<id>/proof`, each a cache miss); p50 / p99 / max.
 *
 * `--store sqlite|postgres|both` (default sqlite): the store every step runs on. PostgreSQL is a
 * throwaway cluster the bench starts (`lib/postgres.js`: durable, removed after), one database
 * per SQLite file (copies are `CREATE DATABASE … TEMPLATE`). With `both`, each step runs on the
 * two side by side in rounds (sqlite, postgres, then postgres, sqlite, …): ingest in
 * BENCH_INGEST_ROUNDS slices (default 4), each settle round on both, proofs in 4 slices.
 * Every step records the CPU it cost: this process's (the store or control runs in it, the
 * receipts hasher's worker included) and, on PostgreSQL, the server's. BENCH_PG_STATEMENTS=N
 * prints PostgreSQL's N costliest statements of each step (`lib/postgres.js`).
 *
 * Prints one line per measurement and writes bench/results/settlement.json.
 * Targets: ingest ≥ 50,000 outcomes/s, settle (with receipts) ≥ 100,000 calls/s, proof p99 < 20 ms;
 * with `both`, PostgreSQL against SQLite: ingest and settlement ≥ 0.5× (in calls/s, and in
 * calls per CPU second with PostgreSQL's server processes counted).
 *
 * The steps live in `settlement/`: parameters and the run's `results` (`params.js`), what is
 * measured and printed (`measure.js`), each store's databases (`sides.js`), ingest, settle,
 * proofs, and the comparison and results file (`report.js`).
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { CALLS, CAPS, ENDPOINTS, HTTP_PROOFS, KEYS, PROOFS, STORE_CHOICE, STORES, BOTH } = require('./settlement/params');
const { statementsFrom, statementsOf } = require('./settlement/measure');
const { openSides } = require('./settlement/sides');
const { records, benchStoreIngest, benchHttpIngest } = require('./settlement/ingest');
const { benchSettle } = require('./settlement/settle');
const { benchProofs } = require('./settlement/proofs');
const { compareStores, writeResults } = require('./settlement/report');

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-settle-'));
  let sides = {};
  try {
    console.log(
      `svc settlement bench: ${CALLS.toLocaleString('en')} outcomes, ${ENDPOINTS} endpoints, ${KEYS} keys, store ${STORE_CHOICE} (${process.version}, ${os.cpus().length} CPUs, load average ${os
        .loadavg()
        .map((v) => v.toFixed(2))
        .join(' ')})`,
    );
    sides = await openSides(dir);
    // Receipts off: the bases record no receipts backfill, so a copy settled without receipts
    // is an install from before receipts, which its next open backfills.
    const t0 = Date.now() - 86_400_000;
    const all = records(CALLS, t0);
    await statementsFrom(sides);
    await benchStoreIngest(sides, all, t0);
    await statementsOf(sides, 'ingest (store)');
    await statementsFrom(sides);
    await benchHttpIngest(sides, dir);
    await statementsOf(sides, 'ingest (HTTP)');
    const lastSigned = await benchSettle(sides, dir);
    if (CAPS.length > 0 && (PROOFS > 0 || HTTP_PROOFS > 0)) {
      // Keep only the calls asked for, so the bench's own million records do not weigh on the
      // garbage collector while proofs are timed (control holds no such array).
      const sample = Array.from(
        { length: (PROOFS + HTTP_PROOFS) * STORES.length + 600 },
        () => all[Math.floor(Math.random() * all.length)].call_id,
      );
      all.length = 0;
      await statementsFrom(sides);
      await benchProofs(sides, lastSigned, sample);
      await statementsOf(sides, 'proofs');
    }
    if (BOTH) compareStores();
    writeResults();
  } finally {
    await sides.postgres?.pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
