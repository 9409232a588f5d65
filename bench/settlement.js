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
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const DIST = path.resolve(__dirname, '..', 'dist');
const { SqliteStore, Store } = require(path.join(DIST, 'control', 'store', 'index.js'));
const { Settler } = require(path.join(DIST, 'control', 'settler', 'settler.js'));
const { startControl } = require(path.join(DIST, 'control', 'server.js'));
const { loadConfig } = require(path.join(DIST, 'config', 'load.js'));
const { silentLogger } = require(path.join(DIST, 'protocol', 'log.js'));
const { envInt } = require('./lib/env');
const { OUTCOME_MIX, OUTCOME_STATUS, uuidv7 } = require('./lib/records');
const { clockTicks } = require('./lib/proc');
const { storesFromArgs, roundOrder, startPostgres } = require('./lib/postgres');

const CALLS = envInt('BENCH_SETTLE_CALLS', 1_000_000);
const HTTP_CALLS = envInt('BENCH_HTTP_CALLS', 200_000);
const CAPS = (process.env.BENCH_SETTLE_CAPS ?? '10000,1000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const ROUNDS = Math.max(1, envInt('BENCH_SETTLE_ROUNDS', 2));
const PROOFS = envInt('BENCH_PROOFS', 20_000);
const HTTP_PROOFS = envInt('BENCH_HTTP_PROOFS', 2_000);
const BATCH = 5_000;
const ENDPOINTS = 10;
const KEYS = 1_000;
const { choice: STORE_CHOICE, stores: STORES } = storesFromArgs();
const BOTH = STORES.length > 1;
const INGEST_ROUNDS = BOTH ? Math.max(1, envInt('BENCH_INGEST_ROUNDS', 4)) : 1;
const SLICES = BOTH ? 4 : 1; // proofs, per store, in rounds
const TARGETS = {
  ingest_per_s: 50_000,
  settle_per_s: 100_000,
  proof_p99_ms: 20,
  postgres_vs_sqlite_ingest_min: 0.5,
  postgres_vs_sqlite_settle_min: 0.5,
};
const CLK = clockTicks();

function records(n, t0) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const started = t0 + Math.floor(i / 20);
    const outcome = OUTCOME_MIX[i % OUTCOME_MIX.length];
    out[i] = {
      call_id: uuidv7(started),
      key_id: i % 50 === 0 ? null : `key_${i % KEYS}`,
      endpoint_id: `ep${i % ENDPOINTS}`,
      method: 'POST',
      status: OUTCOME_STATUS[outcome],
      outcome,
      latency_ms: 10 + (i % 90),
      started_at: new Date(started).toISOString(),
      gateway_id: 'bench-gw',
    };
  }
  return out;
}

async function seedEconomics(store, now) {
  for (let e = 0; e < ENDPOINTS; e++) {
    await store.endpoints.save({
      id: `ep${e}`,
      upstream: 'http://127.0.0.1:9/x',
      methods: ['POST'],
      timeout_ms: 30_000,
      price: 2_000,
      premium: 150,
      sla_ms: 1_000,
      refund_cap_per_hour: 0,
      treasury_fee_bps: 1_000,
      headers: {},
      response_schema: null,
      created_at: now,
      updated_at: now,
    });
  }
  await store.mutate({ actor: 'bench', now }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(1e15, now, 'bench', null));
}

const rate = (n, ms) => Math.round(n / (ms / 1000));
const results = {
  store: STORE_CHOICE,
  calls: CALLS,
  batch: BATCH,
  endpoints: ENDPOINTS,
  keys: KEYS,
  node: process.version,
  cpus: os.cpus().length,
  targets: TARGETS,
  postgres: null,
  by_store: {},
  comparison: [],
};

/** A running total of wall time and CPU: this process's and, on PostgreSQL, the server's (ms). */
const zeroCost = () => ({ ms: 0, process_ms: 0, server_ms: 0 });

/** With BENCH_PG_STATEMENTS: PostgreSQL's statements from here on (`lib/postgres.js`). */
const statementsFrom = (sides) => sides.postgres?.pg.statements?.reset();

/** With BENCH_PG_STATEMENTS: print and keep PostgreSQL's top statements since `statementsFrom`. */
async function statementsOf(sides, label) {
  const statements = sides.postgres?.pg.statements;
  if (statements) (results.by_store.postgres.statements ??= {})[label] = await statements.report(label);
}

/** Time `fn` on `side`, adding its wall time and CPU to `into`; answers fn's result. */
async function measured(side, into, fn) {
  const p0 = process.cpuUsage();
  const s0 = side.pg ? side.pg.ticks() : 0;
  const started = performance.now();
  const out = await fn();
  into.ms += performance.now() - started;
  const p = process.cpuUsage(p0);
  into.process_ms += (p.user + p.system) / 1000;
  if (side.pg) into.server_ms += ((side.pg.ticks() - s0) * 1000) / CLK;
  return out;
}

/** CPU µs per call of a cost: all of it, this process's, the server's. */
function cpuPerCall(cost, n) {
  const us = (ms) => +((ms * 1000) / n).toFixed(2);
  return { cpu_us: us(cost.process_ms + cost.server_ms), process_cpu_us: us(cost.process_ms), server_cpu_us: us(cost.server_ms) };
}

function line(kind, label, n, ms, target, cpu) {
  const r = rate(n, ms);
  const verdict =
    target === undefined
      ? ''
      : r >= target
        ? `  (target ≥ ${target.toLocaleString('en')}: met)`
        : `  (target ≥ ${target.toLocaleString('en')}: MISSED)`;
  const cpuText =
    cpu === undefined
      ? ''
      : `, CPU ${cpu.cpu_us.toFixed(1)} µs each${kind === 'postgres' ? ` (${cpu.process_cpu_us.toFixed(1)} here + ${cpu.server_cpu_us.toFixed(1)} server)` : ''}`;
  console.log(
    `${kind.padEnd(8)} ${label.padEnd(34)} ${String(n).padStart(9)} in ${(ms / 1000).toFixed(2).padStart(6)} s = ${r.toLocaleString('en').padStart(9)}/s${cpuText}${verdict}`,
  );
  return r;
}

/** Summary of a measured step: count, time, rate, CPU per call. */
const stepResult = (n, cost, perS) => ({
  n,
  ms: Math.round(cost.ms),
  per_s: perS,
  ...cpuPerCall(cost, n),
  process_cpu_ms: Math.round(cost.process_ms),
  server_cpu_ms: Math.round(cost.server_ms),
});

/**
 * Where each store keeps a database: SQLite a file `control.db` in a data dir, PostgreSQL a
 * database on the bench's cluster named after the data dir (which holds its signing key).
 */
async function openSides(dir) {
  const sides = {};
  for (const kind of STORES) {
    const baseDir = path.join(dir, kind);
    fs.mkdirSync(baseDir);
    if (kind === 'sqlite') {
      const file = (dataDir) => path.join(dataDir, 'control.db');
      sides.sqlite = {
        kind,
        pg: null,
        baseDir,
        // SQLite's own: the WAL is checkpointed after ingest.
        openBase: () => SqliteStore.open(file(baseDir), { receipts: false }),
        finishBase: async (store) => {
          store.db.pragma('wal_checkpoint(TRUNCATE)');
          await store.close();
        },
        copy: async (dataDir) => fs.copyFileSync(file(baseDir), file(dataDir)),
        open: (dataDir, opts = {}) => Store.open(file(dataDir), opts),
        drop: async (dataDir) => fs.rmSync(dataDir, { recursive: true, force: true }),
        controlFlags: () => ({}),
      };
    } else {
      const { PgStore } = require(path.join(DIST, 'control', 'store', 'pg', 'store.js'));
      const pg = await startPostgres();
      const { Client } = require('pg');
      const dbName = (dataDir) =>
        `bench_${path
          .basename(dataDir)
          .replace(/[^a-z0-9]/gi, '_')
          .toLowerCase()}`;
      const url = (dataDir) => pg.cluster.url(dbName(dataDir));
      results.postgres = { version: pg.version, port: pg.cluster.port, settings: { durable: true, ...pg.settings } };
      console.log(
        `postgres: ${pg.version}, throwaway cluster on port ${pg.cluster.port} (fsync on${Object.keys(pg.settings).length ? `; ${JSON.stringify(pg.settings)}` : ''})`,
      );
      sides.postgres = {
        kind,
        pg,
        baseDir,
        openBase: async () => {
          await pg.cluster.query(`CREATE DATABASE ${dbName(baseDir)}`);
          return PgStore.open(url(baseDir), { dataDir: baseDir, receipts: false });
        },
        // What autovacuum does to a table after its first million inserts, done now so every
        // copy starts with the same statistics and visibility map. Only that table: autovacuum
        // leaves the small ones (one ledger transfer) unanalyzed below its 50-row threshold,
        // and analyzing them here would plan the ledger's foreign key checks as scans of a
        // one-page table for the whole run (bench/README.md, PostgreSQL).
        finishBase: async (store) => {
          await store.close();
          const client = new Client(url(baseDir));
          await client.connect();
          try {
            await client.query('VACUUM (ANALYZE) outcomes');
            await client.query('CHECKPOINT');
          } finally {
            await client.end();
          }
        },
        // FILE_COPY: the copy is a checkpoint and a file copy, not 1M rows through the WAL.
        copy: (dataDir) => pg.cluster.query(`CREATE DATABASE ${dbName(dataDir)} TEMPLATE ${dbName(baseDir)} STRATEGY FILE_COPY`),
        open: (dataDir, opts = {}) => PgStore.open(url(dataDir), { dataDir, ...opts }),
        drop: async (dataDir) => {
          await pg.cluster.query(`DROP DATABASE IF EXISTS ${dbName(dataDir)}`);
          fs.rmSync(dataDir, { recursive: true, force: true });
        },
        controlFlags: async (dataDir, fresh) => {
          if (fresh) await pg.cluster.query(`CREATE DATABASE ${dbName(dataDir)}`);
          return { databaseUrl: url(dataDir) };
        },
      };
    }
    results.by_store[kind] = {};
  }
  return sides;
}

async function startBenchControl(side, dataDir, fresh, extraFlags = {}) {
  const config = loadConfig({
    env: {},
    flags: {
      dataDir,
      host: '127.0.0.1',
      'control.port': 0,
      'api.port': 0,
      'indexer.port': 0,
      'settler.cadenceMs': 3_600_000,
      ...(await side.controlFlags(dataDir, fresh)),
      ...extraFlags,
    },
  });
  return startControl(config, { log: silentLogger });
}

/** Step 1: the same records into each store's base database, in rounds of slices. */
async function benchStoreIngest(sides, all, t0) {
  const bases = {};
  const costs = {};
  for (const kind of STORES) {
    bases[kind] = await sides[kind].openBase();
    await seedEconomics(bases[kind], t0);
    costs[kind] = zeroCost();
  }
  const slice = Math.ceil(all.length / INGEST_ROUNDS / BATCH) * BATCH;
  for (let round = 0, from = 0; from < all.length; round++, from += slice) {
    const to = Math.min(all.length, from + slice);
    for (const kind of roundOrder(STORES, round)) {
      await measured(sides[kind], costs[kind], async () => {
        for (let i = from; i < to; i += BATCH) await bases[kind].outcomes.ingest(all.slice(i, Math.min(to, i + BATCH)), t0 + i);
      });
    }
  }
  for (const kind of STORES) {
    await sides[kind].finishBase(bases[kind]);
    const cpu = cpuPerCall(costs[kind], CALLS);
    results.by_store[kind].ingest_store = stepResult(
      CALLS,
      costs[kind],
      line(kind, 'ingest (store, batches of 5,000)', CALLS, costs[kind].ms, TARGETS.ingest_per_s, cpu),
    );
  }
}

/** Step 2: HTTP_CALLS through a real control per store (in this process), 4 batches in flight, in rounds. */
async function benchHttpIngest(sides, dir) {
  if (HTTP_CALLS === 0) return;
  const controls = {};
  const costs = {};
  try {
    for (const kind of STORES) {
      controls[kind] = await startBenchControl(sides[kind], path.join(dir, `http-${kind}`), true);
      costs[kind] = zeroCost();
    }
    const bodies = [];
    const all = records(HTTP_CALLS, Date.now() - 86_400_000);
    for (let i = 0; i < all.length; i += BATCH) bodies.push(JSON.stringify({ gateway_id: 'bench-gw', records: all.slice(i, i + BATCH) }));
    const perRound = Math.ceil(bodies.length / INGEST_ROUNDS);
    for (let round = 0; round * perRound < bodies.length; round++) {
      const group = bodies.slice(round * perRound, (round + 1) * perRound);
      for (const kind of roundOrder(STORES, round)) {
        const control = controls[kind];
        const url = `${control.urls.control}/_sync/v1/outcomes`;
        const headers = { authorization: `Bearer ${control.bootstrap.syncToken.token}`, 'content-type': 'application/json' };
        let next = 0;
        const worker = async () => {
          while (next < group.length) {
            const body = group[next++];
            const res = await fetch(url, { method: 'POST', headers, body });
            if (res.status !== 200) throw new Error(`${kind}: ingest answered ${res.status}: ${await res.text()}`);
            await res.arrayBuffer();
          }
        };
        await measured(sides[kind], costs[kind], () => Promise.all([worker(), worker(), worker(), worker()]));
      }
    }
    for (const kind of STORES) {
      if ((await controls[kind].ctx.store.outcomes.count()) !== HTTP_CALLS) throw new Error(`${kind}: HTTP ingest lost outcomes`);
      const cpu = cpuPerCall(costs[kind], HTTP_CALLS);
      results.by_store[kind].ingest_http = stepResult(
        HTTP_CALLS,
        costs[kind],
        line(kind, 'ingest (HTTP, batches of 5,000)', HTTP_CALLS, costs[kind].ms, TARGETS.ingest_per_s, cpu),
      );
    }
  } finally {
    for (const control of Object.values(controls)) await control.close();
  }
}

/** Step 3: settle copies of each base at each cap, without and with receipts, in rounds. Answers the last cap's signed copy per store. */
async function benchSettle(sides, dir) {
  const lastSigned = {};
  for (const cap of CAPS) {
    let copies = 0;
    const run = async (kind, receipts) => {
      const side = sides[kind];
      const copyDir = path.join(dir, `settle-${kind}-${cap}-${receipts ? 'receipts' : 'plain'}-${++copies}`);
      fs.mkdirSync(copyDir);
      fs.copyFileSync(path.join(side.baseDir, 'receipt-signing.key'), path.join(copyDir, 'receipt-signing.key'));
      await side.copy(copyDir);
      const s = await side.open(copyDir, { receipts });
      const settler = await Settler.open({ store: s, log: silentLogger, now: Date.now, cadenceMs: 3_600_000, batchCap: cap });
      const cost = zeroCost();
      const done = await measured(side, cost, () => settler.runOnce());
      if (done.calls !== CALLS || done.backlog !== 0) throw new Error(`${kind}: settled ${done.calls} of ${CALLS}`);
      const signedCount = await s.receipts.count();
      if (signedCount !== (receipts ? done.batches.length : 0))
        throw new Error(`${kind}: ${signedCount} receipts for ${done.batches.length} batches`);
      const label = `settle (cap ${cap.toLocaleString('en')}, ${receipts ? 'receipts' : 'no receipts'})`;
      line(kind, label, CALLS, cost.ms, undefined, cpuPerCall(cost, CALLS));
      return { s, copyDir, ms: cost.ms, cost, batches: done.batches.length };
    };
    // Side by side: without and with receipts in alternating order, ROUNDS times each, and
    // with both stores each round on both, in alternating order; the best run of each counts
    // (the machine's capacity, least disturbed by other load).
    await statementsFrom(sides);
    const plainRuns = Object.fromEntries(STORES.map((k) => [k, []]));
    const signedRuns = Object.fromEntries(STORES.map((k) => [k, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of roundOrder(STORES, round)) {
        for (const receipts of round % 2 === 0 ? [false, true] : [true, false]) {
          const r = await run(kind, receipts);
          (receipts ? signedRuns : plainRuns)[kind].push(r);
          await r.s.close();
          if (round < ROUNDS - 1) await sides[kind].drop(r.copyDir);
        }
      }
    }
    await statementsOf(sides, `settle (cap ${cap.toLocaleString('en')}, every run)`);
    const best = (runs) => runs.reduce((a, b) => (b.ms < a.ms ? b : a));
    for (const kind of STORES) {
      const side = sides[kind];
      const plain = best(plainRuns[kind]);
      const signedBest = best(signedRuns[kind]);
      const perSPlain = line(kind, `  best without receipts`, CALLS, plain.ms, undefined, cpuPerCall(plain.cost, CALLS));
      const perS = line(
        kind,
        `  best with receipts (${signedBest.batches} batches)`,
        CALLS,
        signedBest.ms,
        TARGETS.settle_per_s,
        cpuPerCall(signedBest.cost, CALLS),
      );
      console.log(
        `${kind.padEnd(8)} ${'  receipts cost'.padEnd(34)} ${(((signedBest.ms - plain.ms) / plain.ms) * 100).toFixed(1)} % of the time without`,
      );
      const signed = signedRuns[kind][signedRuns[kind].length - 1];
      const verifyStore = await side.open(signed.copyDir);
      const verifyStarted = performance.now();
      const verify = await verifyStore.ledger.verify();
      const verifyMs = performance.now() - verifyStarted;
      await verifyStore.close();
      if (!verify.ok) throw new Error(`${kind}: ledger verify failed: ${verify.violation}`);
      console.log(
        `${kind.padEnd(8)} ${'  ledger verify afterwards'.padEnd(34)} ${(verifyMs / 1000).toFixed(2)} s, ok (${verify.checks.length} checks, receipts included)`,
      );
      // What a store opening an install settled before receipts does: sign every batch, in one transaction.
      const unsigned = plainRuns[kind][plainRuns[kind].length - 1];
      const backfillStarted = performance.now();
      const reopened = await side.open(unsigned.copyDir);
      const backfillMs = performance.now() - backfillStarted;
      if ((await reopened.receipts.count()) !== unsigned.batches) throw new Error(`${kind}: backfill missed batches`);
      await reopened.close();
      console.log(
        `${kind.padEnd(8)} ${'  backfill on open (no receipts →)'.padEnd(34)} ${(backfillMs / 1000).toFixed(2)} s for ${unsigned.batches} batches`,
      );
      await side.drop(unsigned.copyDir);
      const settle = (results.by_store[kind].settle ??= []);
      settle.push({
        batch_cap: cap,
        batches: signed.batches,
        rounds: ROUNDS,
        ...stepResult(CALLS, signedBest.cost, perS),
        runs_ms: signedRuns[kind].map((r) => Math.round(r.ms)),
        runs_cpu_us: signedRuns[kind].map((r) => cpuPerCall(r.cost, CALLS).cpu_us),
        without_receipts: {
          ...stepResult(CALLS, plain.cost, perSPlain),
          runs_ms: plainRuns[kind].map((r) => Math.round(r.ms)),
          runs_cpu_us: plainRuns[kind].map((r) => cpuPerCall(r.cost, CALLS).cpu_us),
        },
        verify_ms: Math.round(verifyMs),
        backfill_ms: Math.round(backfillMs),
      });
      if (lastSigned[kind]) await side.drop(lastSigned[kind]);
      lastSigned[kind] = signed.copyDir;
    }
  }
  return lastSigned;
}

function percentiles(ms) {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, p50_ms: +at(0.5).toFixed(3), p99_ms: +at(0.99).toFixed(3), max_ms: +sorted[sorted.length - 1].toFixed(3) };
}

function proofLine(kind, label, p) {
  const verdict = p.p99_ms < TARGETS.proof_p99_ms ? 'met' : 'MISSED';
  console.log(
    `${kind.padEnd(8)} ${label.padEnd(34)} ${String(p.n).padStart(9)} reads: p50 ${p.p50_ms} ms, p99 ${p.p99_ms} ms, max ${p.max_ms} ms  (target p99 < ${TARGETS.proof_p99_ms} ms: ${verdict})`,
  );
}

/**
 * Step 4: proofs of random settled calls (`callIds`, drawn from all of them) straight from each
 * store, then through a real control's indexer per store; in slices alternating the stores.
 */
async function benchProofs(sides, dataDirs, callIds) {
  let next = 0;
  const pick = () => callIds[next++ % callIds.length];
  const stores = {};
  const times = Object.fromEntries(STORES.map((k) => [k, []]));
  try {
    for (const kind of STORES) {
      stores[kind] = await sides[kind].open(dataDirs[kind]);
      for (let i = 0; i < Math.min(200, PROOFS); i++) await stores[kind].receipts.proof(pick()); // warm-up
    }
    const perSlice = Math.ceil(PROOFS / SLICES);
    for (let slice = 0; slice * perSlice < PROOFS; slice++) {
      const n = Math.min(perSlice, PROOFS - slice * perSlice);
      for (const kind of roundOrder(STORES, slice)) {
        for (let i = 0; i < n; i++) {
          const id = pick();
          const started = performance.now();
          const found = await stores[kind].receipts.proof(id);
          times[kind].push(performance.now() - started);
          if (found.state !== 'settled') throw new Error(`${kind}: no proof for ${id}: ${found.state}`);
        }
      }
    }
  } finally {
    for (const store of Object.values(stores)) await store.close();
  }
  for (const kind of STORES) {
    const direct = PROOFS > 0 ? percentiles(times[kind]) : null;
    if (direct) proofLine(kind, 'proof (store)', direct);
    results.by_store[kind].proofs = { settled_calls: CALLS, batch_cap: CAPS[CAPS.length - 1], direct, http: null };
  }
  if (HTTP_PROOFS === 0) return;
  const controls = {};
  const httpTimes = Object.fromEntries(STORES.map((k) => [k, []]));
  try {
    for (const kind of STORES) {
      controls[kind] = await startBenchControl(sides[kind], dataDirs[kind], false, { 'limits.publicCount': 1_000_000_000 });
    }
    const get = async (kind) => {
      const started = performance.now();
      const res = await fetch(`${controls[kind].urls.indexer}/api/calls/${pick()}/proof`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${kind}: proof answered ${res.status}`);
      return performance.now() - started;
    };
    for (const kind of STORES) for (let i = 0; i < 50; i++) await get(kind); // warm-up
    const perSlice = Math.ceil(HTTP_PROOFS / SLICES);
    for (let slice = 0; slice * perSlice < HTTP_PROOFS; slice++) {
      const n = Math.min(perSlice, HTTP_PROOFS - slice * perSlice);
      for (const kind of roundOrder(STORES, slice)) for (let i = 0; i < n; i++) httpTimes[kind].push(await get(kind));
    }
  } finally {
    for (const control of Object.values(controls)) await control.close();
  }
  for (const kind of STORES) {
    const http = percentiles(httpTimes[kind]);
    proofLine(kind, 'proof (HTTP, indexer)', http);
    results.by_store[kind].proofs.http = http;
  }
}

/** With both stores: PostgreSQL against SQLite, each ratio with its target and verdict. */
function compareStores() {
  const sq = results.by_store.sqlite;
  const pg = results.by_store.postgres;
  const rows = [];
  const ratioRows = (what, a, b, min) => {
    if (!a || !b) return;
    rows.push({
      what: `${what}, calls/s`,
      postgres: b.per_s,
      sqlite: a.per_s,
      ratio: +(b.per_s / a.per_s).toFixed(3),
      target_min: min,
    });
    // Calls per CPU second, PostgreSQL's server processes counted: SQLite's CPU per call ÷ PostgreSQL's.
    rows.push({
      what: `${what}, per CPU (µs/call, server incl.)`,
      postgres: b.cpu_us,
      sqlite: a.cpu_us,
      ratio: +(a.cpu_us / b.cpu_us).toFixed(3),
      target_min: min,
    });
  };
  ratioRows('ingest (store)', sq.ingest_store, pg.ingest_store, TARGETS.postgres_vs_sqlite_ingest_min);
  ratioRows('ingest (HTTP)', sq.ingest_http, pg.ingest_http, TARGETS.postgres_vs_sqlite_ingest_min);
  for (const s of pg.settle ?? []) {
    const a = sq.settle.find((x) => x.batch_cap === s.batch_cap);
    ratioRows(`settle cap ${s.batch_cap.toLocaleString('en')} with receipts`, a, s, TARGETS.postgres_vs_sqlite_settle_min);
  }
  for (const r of rows) r.met = r.ratio >= r.target_min;
  const proofRows = [];
  for (const which of ['direct', 'http']) {
    const a = sq.proofs?.[which];
    const b = pg.proofs?.[which];
    if (!a || !b) continue;
    proofRows.push({
      what: `proof p99 (${which === 'direct' ? 'store' : 'HTTP, indexer'}) among ${CALLS.toLocaleString('en')}`,
      postgres: b.p99_ms,
      sqlite: a.p99_ms,
      target_max_ms: TARGETS.proof_p99_ms,
      met: b.p99_ms < TARGETS.proof_p99_ms,
    });
  }
  console.log('\npostgres vs sqlite, same run (CPU: this process + PostgreSQL server processes)');
  const w = Math.max(...[...rows, ...proofRows].map((r) => r.what.length));
  console.log(`  ${'what'.padEnd(w)}  ${'postgres'.padStart(10)}  ${'sqlite'.padStart(10)}  ${'ratio'.padStart(7)}  target`);
  const num = (v) => (Number.isInteger(v) ? v.toLocaleString('en') : String(v));
  for (const r of rows)
    console.log(
      `  ${r.what.padEnd(w)}  ${num(r.postgres).padStart(10)}  ${num(r.sqlite).padStart(10)}  ${r.ratio.toFixed(3).padStart(6)}×  ≥ ${r.target_min}×: ${r.met ? 'met' : 'MISSED'}`,
    );
  for (const r of proofRows)
    console.log(
      `  ${r.what.padEnd(w)}  ${`${r.postgres} ms`.padStart(10)}  ${`${r.sqlite} ms`.padStart(10)}  ${''.padStart(7)}  postgres < ${r.target_max_ms} ms: ${r.met ? 'met' : 'MISSED'}`,
    );
  results.comparison = [...rows, ...proofRows];
}

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
    results.loadavg_after = os.loadavg().map((v) => +v.toFixed(2));
    const out = path.join(__dirname, 'results', 'settlement.json');
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), ...results }, null, 2) + '\n');
    console.log(`results: ${path.relative(process.cwd(), out)}`);
  } finally {
    await sides.postgres?.pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
