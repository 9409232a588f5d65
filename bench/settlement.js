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
 *    config default is 1,000). Each cap gets its own copy of the database.
 *
 * Prints one line per measurement and writes bench/results/settlement.json.
 * Targets: ingest ≥ 50,000 outcomes/s, settle ≥ 100,000 calls/s.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomFillSync } = require('node:crypto');
const { performance } = require('node:perf_hooks');

const DIST = path.resolve(__dirname, '..', 'dist');
const { Store } = require(path.join(DIST, 'control', 'store', 'index.js'));
const { Settler } = require(path.join(DIST, 'control', 'settler', 'settler.js'));
const { startControl } = require(path.join(DIST, 'control', 'server.js'));
const { loadConfig } = require(path.join(DIST, 'config', 'load.js'));
const { silentLogger } = require(path.join(DIST, 'protocol', 'log.js'));

function envInt(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  return n;
}

const CALLS = envInt('BENCH_SETTLE_CALLS', 1_000_000);
const HTTP_CALLS = envInt('BENCH_HTTP_CALLS', 200_000);
const CAPS = (process.env.BENCH_SETTLE_CAPS ?? '10000,1000').split(',').map(Number).filter((n) => n > 0);
const BATCH = 5_000;
const ENDPOINTS = 10;
const KEYS = 1_000;
const TARGETS = { ingest_per_s: 50_000, settle_per_s: 100_000 };
const MIX = ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'latency_breach', 'server_error', 'network_error', 'client_error'];

const rnd = Buffer.alloc(10 * 4096);
let rndAt = rnd.length;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
function uuidv7(ms) {
  if (rndAt >= rnd.length) {
    randomFillSync(rnd);
    rndAt = 0;
  }
  const r = rndAt;
  rndAt += 10;
  const t = ms.toString(16).padStart(12, '0');
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-${HEX[0x70 | (rnd[r] & 15)]}${HEX[rnd[r + 1]]}-${HEX[0x80 | (rnd[r + 2] & 63)]}${HEX[rnd[r + 3]]}-${HEX[rnd[r + 4]]}${HEX[rnd[r + 5]]}${HEX[rnd[r + 6]]}${HEX[rnd[r + 7]]}${HEX[rnd[r + 8]]}${HEX[rnd[r + 9]]}`;
}

function records(n, t0) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const started = t0 + Math.floor(i / 20);
    const outcome = MIX[i % MIX.length];
    out[i] = {
      call_id: uuidv7(started),
      key_id: i % 50 === 0 ? null : `key_${i % KEYS}`,
      endpoint_id: `ep${i % ENDPOINTS}`,
      method: 'POST',
      status: outcome === 'server_error' ? 500 : outcome === 'client_error' ? 404 : outcome === 'network_error' ? 502 : 200,
      outcome,
      latency_ms: 10 + (i % 90),
      started_at: new Date(started).toISOString(),
      gateway_id: 'bench-gw',
    };
  }
  return out;
}

function seedEconomics(store, now) {
  for (let e = 0; e < ENDPOINTS; e++) {
    store.endpoints.save({
      id: `ep${e}`, upstream: 'http://127.0.0.1:9/x', methods: ['POST'], timeout_ms: 30_000, price: 2_000, premium: 150,
      sla_ms: 1_000, refund_cap_per_hour: 0, treasury_fee_bps: 1_000, headers: {}, response_schema: null, created_at: now, updated_at: now,
    });
  }
  store.mutate({ actor: 'bench', now }, { action: 'pool.fund' }, () => store.ledger.fund(1e15, now, 'bench', null));
}

const rate = (n, ms) => Math.round(n / (ms / 1000));
const results = { calls: CALLS, batch: BATCH, endpoints: ENDPOINTS, keys: KEYS, node: process.version, cpus: os.cpus().length, targets: TARGETS };

function line(label, n, ms, target) {
  const r = rate(n, ms);
  const verdict = target === undefined ? '' : r >= target ? `  (target ≥ ${target.toLocaleString('en')}: met)` : `  (target ≥ ${target.toLocaleString('en')}: MISSED)`;
  console.log(`${label.padEnd(34)} ${String(n).padStart(9)} in ${(ms / 1000).toFixed(2).padStart(6)} s = ${r.toLocaleString('en').padStart(9)}/s${verdict}`);
  return r;
}

async function benchHttpIngest(dir) {
  if (HTTP_CALLS === 0) return null;
  const config = loadConfig({ env: {}, flags: { dataDir: path.join(dir, 'http'), host: '127.0.0.1', 'control.port': 0, 'api.port': 0, 'indexer.port': 0, 'settler.cadenceMs': 3_600_000 } });
  const control = await startControl(config, { log: silentLogger });
  try {
    const url = `${control.urls.control}/_sync/v1/outcomes`;
    const headers = { authorization: `Bearer ${control.bootstrap.syncToken.token}`, 'content-type': 'application/json' };
    const bodies = [];
    const all = records(HTTP_CALLS, Date.now() - 86_400_000);
    for (let i = 0; i < all.length; i += BATCH) bodies.push(JSON.stringify({ gateway_id: 'bench-gw', records: all.slice(i, i + BATCH) }));
    let next = 0;
    const started = performance.now();
    const worker = async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        const res = await fetch(url, { method: 'POST', headers, body });
        if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    const ms = performance.now() - started;
    if (control.ctx.store.outcomes.count() !== HTTP_CALLS) throw new Error('HTTP ingest lost outcomes');
    return { n: HTTP_CALLS, ms };
  } finally {
    await control.close();
  }
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-settle-'));
  try {
    const base = path.join(dir, 'base.db');
    const store = Store.open(base);
    const t0 = Date.now() - 86_400_000;
    seedEconomics(store, t0);
    const all = records(CALLS, t0);
    let started = performance.now();
    for (let i = 0; i < all.length; i += BATCH) store.outcomes.ingest(all.slice(i, i + BATCH), t0 + i);
    const ingestMs = performance.now() - started;
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    store.close();
    console.log(`svc settlement bench: ${CALLS.toLocaleString('en')} outcomes, ${ENDPOINTS} endpoints, ${KEYS} keys (${process.version}, ${os.cpus().length} CPUs)`);
    results.ingest_store = { n: CALLS, ms: Math.round(ingestMs), per_s: line('ingest (store, batches of 5,000)', CALLS, ingestMs, TARGETS.ingest_per_s) };

    const http = await benchHttpIngest(dir);
    if (http) results.ingest_http = { n: http.n, ms: Math.round(http.ms), per_s: line('ingest (HTTP, batches of 5,000)', http.n, http.ms, TARGETS.ingest_per_s) };

    results.settle = [];
    for (const cap of CAPS) {
      const copy = path.join(dir, `settle-${cap}.db`);
      fs.copyFileSync(base, copy);
      const s = Store.open(copy);
      const settler = new Settler({ store: s, log: silentLogger, now: Date.now, cadenceMs: 3_600_000, batchCap: cap });
      started = performance.now();
      const run = await settler.runOnce();
      const ms = performance.now() - started;
      if (run.calls !== CALLS || run.backlog !== 0) throw new Error(`settled ${run.calls} of ${CALLS}`);
      const verifyStarted = performance.now();
      const verify = s.ledger.verify();
      const verifyMs = performance.now() - verifyStarted;
      if (!verify.ok) throw new Error(`ledger verify failed: ${verify.violation}`);
      const perS = line(`settle (batch cap ${cap.toLocaleString('en')}, ${run.batches.length} batches)`, CALLS, ms, TARGETS.settle_per_s);
      console.log(`${'  ledger verify afterwards'.padEnd(34)} ${(verifyMs / 1000).toFixed(2)} s, ok`);
      results.settle.push({ batch_cap: cap, batches: run.batches.length, ms: Math.round(ms), per_s: perS, verify_ms: Math.round(verifyMs) });
      s.close();
    }
    const out = path.join(__dirname, 'results', 'settlement.json');
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), ...results }, null, 2) + '\n');
    console.log(`results: ${path.relative(process.cwd(), out)}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
