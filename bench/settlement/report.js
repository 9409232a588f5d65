'use strict';
/**
 * The end of the settlement bench: with both stores, PostgreSQL against SQLite (each ratio with
 * its target and verdict), and `results/settlement.json`.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { CALLS, TARGETS, results } = require('./params');

/** Rows of PostgreSQL ÷ SQLite ratios: ingest and settlement, in calls/s and per CPU. */
function ratioRows(sq, pg) {
  const rows = [];
  const add = (what, a, b, min) => {
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
  add('ingest (store)', sq.ingest_store, pg.ingest_store, TARGETS.postgres_vs_sqlite_ingest_min);
  add('ingest (HTTP)', sq.ingest_http, pg.ingest_http, TARGETS.postgres_vs_sqlite_ingest_min);
  for (const s of pg.settle ?? []) {
    const a = sq.settle.find((x) => x.batch_cap === s.batch_cap);
    add(`settle cap ${s.batch_cap.toLocaleString('en')} with receipts`, a, s, TARGETS.postgres_vs_sqlite_settle_min);
  }
  for (const r of rows) r.met = r.ratio >= r.target_min;
  return rows;
}

/** Rows of both stores' proof p99, PostgreSQL's against the target. */
function proofRows(sq, pg) {
  const rows = [];
  for (const which of ['direct', 'http']) {
    const a = sq.proofs?.[which];
    const b = pg.proofs?.[which];
    if (!a || !b) continue;
    rows.push({
      what: `proof p99 (${which === 'direct' ? 'store' : 'HTTP, indexer'}) among ${CALLS.toLocaleString('en')}`,
      postgres: b.p99_ms,
      sqlite: a.p99_ms,
      target_max_ms: TARGETS.proof_p99_ms,
      met: b.p99_ms < TARGETS.proof_p99_ms,
    });
  }
  return rows;
}

/** With both stores: PostgreSQL against SQLite, each ratio with its target and verdict. */
function compareStores() {
  const sq = results.by_store.sqlite;
  const pg = results.by_store.postgres;
  const rows = ratioRows(sq, pg);
  const proofs = proofRows(sq, pg);
  console.log('\npostgres vs sqlite, same run (CPU: this process + PostgreSQL server processes)');
  const w = Math.max(...[...rows, ...proofs].map((r) => r.what.length));
  console.log(`  ${'what'.padEnd(w)}  ${'postgres'.padStart(10)}  ${'sqlite'.padStart(10)}  ${'ratio'.padStart(7)}  target`);
  const num = (v) => (Number.isInteger(v) ? v.toLocaleString('en') : String(v));
  for (const r of rows)
    console.log(
      `  ${r.what.padEnd(w)}  ${num(r.postgres).padStart(10)}  ${num(r.sqlite).padStart(10)}  ${r.ratio.toFixed(3).padStart(6)}×  ≥ ${r.target_min}×: ${r.met ? 'met' : 'MISSED'}`,
    );
  for (const r of proofs)
    console.log(
      `  ${r.what.padEnd(w)}  ${`${r.postgres} ms`.padStart(10)}  ${`${r.sqlite} ms`.padStart(10)}  ${''.padStart(7)}  postgres < ${r.target_max_ms} ms: ${r.met ? 'met' : 'MISSED'}`,
    );
  results.comparison = [...rows, ...proofs];
}

/** `results/settlement.json`, with the load average after the run. */
function writeResults() {
  results.loadavg_after = os.loadavg().map((v) => +v.toFixed(2));
  const out = path.join(__dirname, '..', 'results', 'settlement.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), ...results }, null, 2) + '\n');
  console.log(`results: ${path.relative(process.cwd(), out)}`);
}

module.exports = { compareStores, writeResults };
