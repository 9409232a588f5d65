#!/usr/bin/env node
'use strict';
/**
 * The gateway's request pipeline alone, two builds against each other: `createHandler` of each
 * `dist/` on the same fake request, a stub proxy that answers at once (head, body end, done)
 * and a journal that writes nothing, so only the pipeline's own work is timed (admit → route →
 * limit → forward → record, one admitted keyed call each). The builds alternate in one process,
 * 15 rounds of 200,000 calls after a warm-up; printed: ns per call of each (median) and the
 * median of the per-round ratios. For hot-path changes too small for `npm run bench` on a busy
 * machine (bench/README.md, "The request pipeline as named stages").
 *
 *   node bench/handler-ab.js <before>/dist <after>/dist      (pin it: taskset -c 1 node …)
 */
const path = require('node:path');
const { internal } = require('./lib/internals');

if (process.argv.length !== 4) {
  console.error('usage: node bench/handler-ab.js <before dist dir> <after dist dir>');
  process.exit(2);
}
const trees = { before: path.resolve(process.argv[2]), after: path.resolve(process.argv[3]) };
const KEY = internal('protocol/keys', trees.before).generateKey();
const key = { id: 'k1', expiresAt: Infinity, endpoints: null, limit: null, lift: null, account: null };
const endpoint = {
  id: 'ep',
  upstream: new URL('http://127.0.0.1:9/base'),
  methods: new Set(['POST']),
  allow: 'POST',
  timeoutMs: 5000,
  slaMs: 2000,
  price: 0,
  premium: 0,
  prepaid: false,
  headers: {},
  responseSchema: null,
};
/**
 * The handler's collaborators are fakes holding only what the pipeline touches, each typed as
 * that part of the real one (a rename there fails `npm run lint`), handed over as the whole.
 * @typedef {import('../gateway/request/handler').HandlerOptions} HandlerOptions
 * @type {Pick<import('../gateway/state/state').GatewayState, 'flags' | 'lookup' | 'endpoints' | 'limits'>}
 */
const state = {
  flags: { maintenance_mode: false, beta_gate_enabled: true },
  lookup: () => key,
  endpoints: new Map([['ep', endpoint]]),
  limits: { key: { count: 1e9, window_seconds: 1, burst: 1e9 }, ip: { count: 1e9, window_seconds: 1, burst: 1e9 } },
};
const result = { status: 200, sentStatus: 200, networkError: null, upstreamLatencyMs: 1.2 };
/** @type {Pick<HandlerOptions['proxy'], 'forward'>} */
const proxy = {
  forward(req, res, target, done, onHead) {
    const head = {
      status: 200,
      headers: ['content-type', 'application/json'],
      fromUpstream: true,
      networkError: null,
      callerFailure: null,
      upstreamLatencyMs: 1.2,
    };
    onHead(head);
    head.body.end(() => {});
    done(result);
  },
};
let appended = 0;
/** @type {Pick<HandlerOptions['journal'], 'append' | 'appendThen'>} */
const journal = {
  append() {
    appended++;
  },
  appendThen(_r, release) {
    appended++;
    release(null);
  },
};
/** @type {Pick<HandlerOptions['metrics'], 'call' | 'rejection' | 'schemaCheck'>} */
const metrics = {
  call() {},
  rejection(c) {
    throw new Error('refused ' + c);
  },
  schemaCheck() {},
};
const handlers = {};
for (const [name, dist] of Object.entries(trees)) {
  const { createHandler } = internal('gateway/request/handler', dist);
  handlers[name] = createHandler({
    gatewayId: 'g',
    state: () => /** @type {import('../gateway/state/state').GatewayState} */ (state),
    proxy: /** @type {HandlerOptions['proxy']} */ (proxy),
    journal: /** @type {HandlerOptions['journal']} */ (journal),
    metrics: /** @type {HandlerOptions['metrics']} */ (metrics),
    bodyLimitBytes: 1 << 20,
    maintenanceRetryAfterS: 60,
    trustedProxyHops: 0,
    maxHeaders: 100,
  });
}
const rawHeaders = ['host', 'gw', 'authorization', 'Bearer ' + KEY, 'content-type', 'application/json', 'content-length', '200'];
const req = {
  rawHeaders,
  url: '/v1/ep/chat/completions',
  method: 'POST',
  headers: { host: 'gw', authorization: 'Bearer ' + KEY, 'content-type': 'application/json', 'content-length': '200' },
  socket: { remoteAddress: '127.0.0.1' },
  resume() {},
};
const res = { setHeader() {} };
const N = 200000;
function run(h) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) h(req, res);
  return Number(process.hrtime.bigint() - t0) / N;
}
for (const h of Object.values(handlers)) for (let i = 0; i < 3; i++) run(h); // warm-up
const samples = { before: [], after: [] };
for (let round = 0; round < 15; round++) {
  const order = round % 2 ? ['after', 'before'] : ['before', 'after'];
  for (const name of order) samples[name].push(run(handlers[name]));
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const ratios = samples.before.map((b, i) => samples.after[i] / b);
console.log(
  JSON.stringify({
    before_ns: med(samples.before).toFixed(0),
    after_ns: med(samples.after).toFixed(0),
    paired_ratio_median: med(ratios).toFixed(4),
    appended,
  }),
);
