'use strict';
/**
 * What each step of the settlement bench records and prints: wall time and CPU (this
 * process's and, on PostgreSQL, the server's), rates, percentiles, one line per measurement,
 * and with BENCH_PG_STATEMENTS PostgreSQL's costliest statements per step.
 */
const { performance } = require('node:perf_hooks');
const { CLK, TARGETS, results } = require('./params');

const rate = (n, ms) => Math.round(n / (ms / 1000));

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

module.exports = { zeroCost, statementsFrom, statementsOf, measured, cpuPerCall, line, stepResult, percentiles, proofLine };
