'use strict';
/**
 * The settlement bench's parameters (`BENCH_SETTLE_*` and friends, see `../settlement.js`), its
 * targets, the build it runs on, and `results`: the run's record, filled in by every step and
 * written to `results/settlement.json` at the end.
 */
const os = require('node:os');
const path = require('node:path');
const { envInt } = require('../lib/env');
const { clockTicks } = require('../lib/proc');
const { storesFromArgs } = require('../lib/postgres');

const DIST = path.resolve(__dirname, '..', '..', 'dist');
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

module.exports = {
  DIST,
  CALLS,
  HTTP_CALLS,
  CAPS,
  ROUNDS,
  PROOFS,
  HTTP_PROOFS,
  BATCH,
  ENDPOINTS,
  KEYS,
  STORE_CHOICE,
  STORES,
  BOTH,
  INGEST_ROUNDS,
  SLICES,
  TARGETS,
  CLK,
  results,
};
