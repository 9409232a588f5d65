'use strict';
/**
 * Steps 1 and 2 of the settlement bench: the outcome records, the endpoints and pool they are
 * settled against, and ingest, straight into each store's base database and through a real
 * control's `POST /_sync/v1/outcomes`.
 */
const path = require('node:path');
const { BATCH, CALLS, ENDPOINTS, HTTP_CALLS, INGEST_ROUNDS, KEYS, STORES, TARGETS, results } = require('./params');
const { cpuPerCall, line, measured, stepResult, zeroCost } = require('./measure');
const { startBenchControl } = require('./sides');
const { OUTCOME_MIX, OUTCOME_STATUS, uuidv7 } = require('../lib/records');
const { roundOrder } = require('../lib/postgres');

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
      refund_cap_per_call: 0,
      refund_cap_per_batch: 0,
      treasury_fee_bps: 1_000,
      headers: {},
      response_schema: null,
      created_at: now,
      updated_at: now,
    });
  }
  await store.mutate({ actor: 'bench', now }, { action: 'pool.fund' }, (tx) => tx.ledger.fund(1e15, now, 'bench', null));
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

/** Post `group` (request bodies) to `control`'s outcome ingest, 4 in flight. */
async function postOutcomes(kind, control, group) {
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
  await Promise.all([worker(), worker(), worker(), worker()]);
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
        await measured(sides[kind], costs[kind], () => postOutcomes(kind, controls[kind], group));
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

module.exports = { records, benchStoreIngest, benchHttpIngest };
