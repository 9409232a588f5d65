'use strict';
/**
 * `npm run bench`'s parameters (from the `BENCH_*` environment, bench/README.md "Running it"),
 * its targets, the names of what it starts, and its log line.
 */
const { envInt } = require('./env');

const ENDPOINT = 'bench';
const GATEWAY_ID = 'bench-gw';
/** The gateway's engines, each loaded as two processes (`a`, `b`): one process's speed can differ by ~10% for its life. */
const ENGINES = ['http-proxy', 'undici'];
const PROCESSES = ['a', 'b'];
const BASELINES = ['bare-http-proxy', 'bare-undici', 'direct'];

function envSizes(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined) return fallback;
  if (raw.trim() === '' || raw.trim() === '0') return [];
  const sizes = raw.split(',').map((v) => Number(v.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 12 || n > 16 * 1024 * 1024))
    throw new Error(`${name} must be a comma-separated list of byte counts (12 to 16777216), got ${JSON.stringify(raw)}`);
  return sizes;
}

const duration = envInt('BENCH_DURATION', 10, 1);
const params = {
  duration_s: duration,
  rounds: envInt('BENCH_ROUNDS', 3, 1),
  connections: envInt('BENCH_CONNECTIONS', 50, 1),
  pipelining: 1,
  warmup_s: envInt('BENCH_WARMUP', 3, 0),
  body_bytes: 200,
  response_sizes: envSizes('BENCH_SIZES', [16 * 1024, 1024]),
  size_connections: envInt('BENCH_SIZE_CONNECTIONS', 500, 1),
  size_rounds: envInt('BENCH_SIZE_ROUNDS', 3, 1),
  size_duration_s: envInt('BENCH_SIZE_DURATION', Math.max(3, Math.round(duration / 2)), 1),
  keys: envInt('BENCH_KEYS', 100_000, 1),
  keys_large: envInt('BENCH_KEYS_LARGE', 1_000_000, 0),
  revoke_keys: envInt('BENCH_REVOKE_KEYS', 100, 0),
  compare_rounds: envInt('BENCH_COMPARE_ROUNDS', 2, 1),
  compare_duration_s: envInt('BENCH_COMPARE_DURATION', Math.max(3, Math.round(duration / 2)), 1),
  threads: process.env.BENCH_THREADS === '1',
  held: process.env.BENCH_HELD === '1',
  profile: process.env.BENCH_PROFILE === '1',
  /** The prepaid phase (`lib/prepaid.js`); `BENCH_PREPAID=0` leaves it out. */
  prepaid: process.env.BENCH_PREPAID !== '0',
  quiet_wait_s: envInt('BENCH_QUIET_WAIT', 0, 0),
  /** Node options for the gateway processes of phase 1, e.g. `--max-semi-space-size=32` (GC tuning A/B). */
  gateway_node_args: (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter((a) => a !== ''),
  upstream_max_sockets: 256,
};

/**
 * Issue #13's targets (50 connections, paired CPU ratios; the two against each engine's bare
 * proxy are #48's, undici tightened from 1.35), and the sync and memory ones of #3.
 */
const TARGETS = {
  undici_cpu_vs_bare_http_proxy_max: 1.0,
  undici_cpu_vs_bare_undici_max: 1.25,
  undici_p99_vs_bare_http_proxy_max: 1.0,
  undici_req_per_s_vs_bare_http_proxy_min: 1.0,
  http_proxy_cpu_vs_bare_http_proxy_max: 1.3,
  revocation_p99_ms_max: 100,
  rss_1m_mib_max: 400,
  req_per_s_1m_vs_10_min: 0.95,
  /** #46: a prepaid endpoint costs the gateway at most 3 % more CPU per request than a postpaid one. */
  prepaid_cpu_vs_postpaid_max: 1.03,
};

const log = (msg) => process.stdout.write(`${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

module.exports = { ENDPOINT, GATEWAY_ID, ENGINES, PROCESSES, BASELINES, params, TARGETS, log, sleep };
