#!/usr/bin/env node
'use strict';
/**
 * `npm run bench:metrics`: what the gateway's per-call metric updates cost, prom-client (the
 * built `GatewayMetrics`, `dist/gateway/metrics.js`) against the hand-rolled Map counters it
 * replaced (copied below from `gateway/metrics.ts` before prom-client, for this comparison
 * only), in this one process. Per admitted call the gateway counts
 * `svc_gateway_requests_total{endpoint,outcome,status}` and observes
 * `svc_gateway_upstream_latency_seconds{endpoint}`; that pair is one "call" here. The labels
 * cycle through 4 endpoints × 4 outcomes × 4 statuses and the latencies through 1,024 values
 * spread over the buckets, so no variant sees one constant label set.
 *
 * Variants:
 * - `hand-rolled`: one Map lookup per series, keyed by the joined label values.
 * - `GatewayMetrics (prom-client)`: `GatewayMetrics.call()` as the gateway runs it:
 *   `Counter.inc(labels)` + `Histogram.observe(labels, s)` (prom-client hashes the label object
 *   on every call).
 * - `prom-client, children`: each label set's child (`.labels(...)`) kept in a Map of our own,
 *   then `child.inc()` / `child.observe(s)` (a child still hashes its labels on every call).
 *
 * BENCH_CALLS calls per run (default 1,000,000), BENCH_ROUNDS runs per variant (default 5),
 * variants alternating; the figure is the median of the runs' mean ns per call, in this
 * process's CPU time (`process.cpuUsage()`, user + system), so time spent descheduled on a
 * shared machine is not counted. The gateway would keep hand-rolled counters if prom-client
 * cost more than 1 µs per call (issue #16). Timings only here, never in tests.
 */
const { Counter, Histogram, Registry } = require('prom-client');
const { internal } = require('./lib/internals');
const { median, round } = require('./lib/stats');

const { GatewayMetrics, LATENCY_BUCKETS_S } = internal('gateway/metrics');

const CALLS = Number(process.env.BENCH_CALLS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** The 1 µs per call above which the gateway keeps its hand-rolled counters (issue #16). */
const BUDGET_NS = 1000;

const ENDPOINTS = ['echo', 'search', 'weather-v2', 'llm_chat'];
const OUTCOMES = ['ok', 'server_error', 'latency_breach', 'client_error'];
const STATUSES = [200, 201, 502, 404];
const N = 1024;
const calls = Array.from({ length: N }, (_, i) => ({
  endpoint: ENDPOINTS[i % 4],
  outcome: OUTCOMES[(i >> 2) % 4],
  status: STATUSES[(i >> 4) % 4],
  seconds: ((i * 7919) % 1000) / 100, // 0 … 9.99 s, spread over the buckets
}));

const gauges = {
  snapshotVersion: () => 1,
  snapshotAgeSeconds: () => 0,
  journalBacklog: () => 0,
  controlConnected: () => true,
  keys: () => 0,
};

/** The hand-rolled per-call updates the gateway had before prom-client. */
class HandRolled {
  constructor() {
    this.requests = new Map();
    this.latency = new Map();
  }

  call(endpoint, outcome, status, upstreamSeconds) {
    const key = `${endpoint}\u0000${outcome}\u0000${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    if (upstreamSeconds !== null) {
      let h = this.latency.get(endpoint);
      if (!h) this.latency.set(endpoint, (h = { counts: new Array(LATENCY_BUCKETS_S.length + 1).fill(0), sum: 0, count: 0 }));
      let i = 0;
      while (i < LATENCY_BUCKETS_S.length && upstreamSeconds > LATENCY_BUCKETS_S[i]) i++;
      h.counts[i]++;
      h.sum += upstreamSeconds;
      h.count++;
    }
  }
}

function handRolled() {
  const m = new HandRolled();
  return (c) => m.call(c.endpoint, c.outcome, c.status, c.seconds);
}

function gatewayMetrics() {
  const m = new GatewayMetrics(gauges);
  return (c) => m.call(c.endpoint, c.outcome, c.status, c.seconds);
}

function promFamilies() {
  const registry = new Registry();
  const requests = new Counter({
    name: 'svc_gateway_requests_total',
    help: 'h',
    labelNames: ['endpoint', 'outcome', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'svc_gateway_upstream_latency_seconds',
    help: 'h',
    labelNames: ['endpoint'],
    buckets: LATENCY_BUCKETS_S,
    registers: [registry],
  });
  return { requests, latency };
}

function promChildren() {
  const { requests, latency } = promFamilies();
  const counters = new Map();
  const histograms = new Map();
  return (c) => {
    const key = `${c.endpoint}\u0000${c.outcome}\u0000${c.status}`;
    let counter = counters.get(key);
    if (counter === undefined) counters.set(key, (counter = requests.labels(c.endpoint, c.outcome, String(c.status))));
    counter.inc();
    let histogram = histograms.get(c.endpoint);
    if (histogram === undefined) histograms.set(c.endpoint, (histogram = latency.labels(c.endpoint)));
    histogram.observe(c.seconds);
  };
}

const VARIANTS = { 'hand-rolled': handRolled, 'GatewayMetrics (prom-client)': gatewayMetrics, 'prom-client, children': promChildren };

/** This process's CPU time (user + system), ns. */
const cpuNs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
};

/** Mean CPU ns per call over CALLS calls on a fresh instance. */
function run(make) {
  const call = make();
  for (let i = 0; i < 10_000; i++) call(calls[i & (N - 1)]);
  const start = cpuNs();
  for (let i = 0; i < CALLS; i++) call(calls[i & (N - 1)]);
  return (cpuNs() - start) / CALLS;
}

function main() {
  const samples = Object.fromEntries(Object.keys(VARIANTS).map((k) => [k, []]));
  for (const make of Object.values(VARIANTS)) run(make); // warm every variant before timing any
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 ? Object.keys(VARIANTS).reverse() : Object.keys(VARIANTS);
    for (const k of order) samples[k].push(run(VARIANTS[k]));
  }
  const hand = median(samples['hand-rolled']);
  const rows = Object.entries(samples).map(([k, v]) => ({
    variant: k,
    'CPU ns per call (median)': round(median(v), 0),
    runs: v.map((x) => round(x, 0)).join(' '),
    'over hand-rolled ns': round(median(v) - hand, 0),
  }));
  console.table(rows);
  const prom = median(samples['GatewayMetrics (prom-client)']);
  console.log(
    `prom-client costs ${round(prom, 0)} ns per call (${prom > BUDGET_NS ? 'over' : 'within'} the ${BUDGET_NS} ns budget); ` +
      `node ${process.version}, ${CALLS} calls × ${ROUNDS} runs per variant`,
  );
}

main();
