'use strict';
/**
 * `pipeline-ab.js`'s server: one proxy engine of a build, with or without the gateway's request
 * pipeline in front of it.
 *
 * - `gateway`: the real pipeline (`createHandler`: admit, route, limit, cover, forward, the
 *   outcome record, the journal on a temporary directory, prom-client metrics) on the real
 *   engine, without control: a fixed state of one endpoint and one key (unthrottled), the gate
 *   on, and the journal's records acked from memory every 250 ms as the shipper's fast path
 *   does when control answers (`pendingBatch` / `ackBatch`, without the POST).
 * - `engine`: the engine alone, as `forward()` is called by the pipeline (headers from
 *   `upstreamRequestHeaders`, a body observer that releases at once), with nothing else.
 *
 * Usage: node pipeline-server.js <dist dir> <engine> <upstream base URL> gateway|engine <key>
 *
 * BENCH_PROXY_WORKERS=N (default 1): N such servers on one port under node:cluster, each with its
 * own journal (`serveOnePort`; `npm run bench:workers`).
 */
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { hash } = require('node:crypto');
const { internal } = require('../lib/internals');
const { serveOnePort } = require('./common');

const [dist, engine, base, mode, key] = process.argv.slice(2);
if (!dist || !engine || !base || (mode !== 'gateway' && mode !== 'engine') || !key)
  throw new Error('usage: pipeline-server.js <dist dir> <engine> <upstream base URL> gateway|engine <key>');
const { createProxy, upstreamRequestHeaders } = internal('gateway/proxy/index', dist);
const proxy = createProxy({ engine: /** @type {import('../../gateway/proxy/index').GatewayEngine} */ (engine) });
const origin = new URL(base);

/** @returns {import('node:http').RequestListener} */
function gatewayHandler() {
  const { createHandler } = internal('gateway/request/handler', dist);
  const { Journal } = internal('gateway/journal/journal', dist);
  const { GatewayMetrics } = internal('gateway/metrics', dist);
  const digest = hash('sha256', key, 'hex');
  const entry = { id: 'k1', expiresAt: Infinity, endpoints: null, limit: null, lift: null, account: null };
  const endpoint = {
    id: 'bench',
    upstream: origin,
    methods: new Set(['GET', 'POST']),
    allow: 'GET, POST',
    timeoutMs: 30_000,
    slaMs: 2_000,
    price: 1,
    premium: 0,
    prepaid: false,
    headers: {},
    responseSchema: null,
  };
  /** @type {Pick<import('../../gateway/state/state').GatewayState, 'flags' | 'lookup' | 'endpoints' | 'limits'>} */
  const state = {
    flags: { maintenance_mode: false, beta_gate_enabled: true },
    lookup: (h) => (h === digest ? /** @type {any} */ (entry) : null),
    endpoints: new Map([['bench', endpoint]]),
    limits: { key: { count: 1e9, window_seconds: 1, burst: 1e9 }, ip: { count: 1e9, window_seconds: 1, burst: 1e9 } },
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pipeline-journal-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  const journal = Journal.open({ dir });
  setInterval(() => {
    const batch = journal.pendingBatch(10_000);
    if (batch !== null) journal.ackBatch(batch);
  }, 250).unref();
  const metrics = new GatewayMetrics({
    snapshotVersion: () => 1,
    snapshotAgeSeconds: () => 0,
    journalBacklog: () => journal.backlog(),
    controlConnected: () => true,
    keys: () => 1,
  });
  return createHandler({
    gatewayId: 'pipeline',
    state: () => /** @type {import('../../gateway/state/state').GatewayState} */ (state),
    proxy,
    journal,
    metrics,
    bodyLimitBytes: 1 << 20,
    maintenanceRetryAfterS: 60,
    trustedProxyHops: 0,
    maxHeaders: 100,
  });
}

/** @type {import('node:http').RequestListener} */
function engineHandler(req, res) {
  const headers = upstreamRequestHeaders(req.rawHeaders, {
    clientAddress: req.socket.remoteAddress ?? '',
    proto: 'http',
    host: origin.host,
  });
  const target = { origin, path: `${origin.pathname}${req.url}`, headers, timeoutMs: 30_000, bodyLimitBytes: 1 << 20 };
  proxy.forward(
    req,
    res,
    target,
    () => {},
    (head) => {
      if (head.fromUpstream) head.body = { end: (release) => release(null) };
    },
  );
}

serveOnePort(`pipeline-${mode}`, () => http.createServer(mode === 'gateway' ? gatewayHandler() : engineHandler));
