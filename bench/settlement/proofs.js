'use strict';
/**
 * Step 4 of the settlement bench: inclusion proofs of random settled calls, straight from each
 * store, then through a real control's indexer per store; in slices alternating the stores.
 */
const { performance } = require('node:perf_hooks');
const { CALLS, CAPS, HTTP_PROOFS, PROOFS, SLICES, STORES, results } = require('./params');
const { percentiles, proofLine } = require('./measure');
const { startBenchControl } = require('./sides');
const { roundOrder } = require('../lib/postgres');

/** `n` timed calls of `time(kind)` per store, in slices alternating the stores; answers the times per store. */
async function inSlices(n, time) {
  const times = Object.fromEntries(STORES.map((k) => [k, []]));
  const perSlice = Math.ceil(n / SLICES);
  for (let slice = 0; slice * perSlice < n; slice++) {
    const count = Math.min(perSlice, n - slice * perSlice);
    for (const kind of roundOrder(STORES, slice)) for (let i = 0; i < count; i++) times[kind].push(await time(kind));
  }
  return times;
}

/** Proofs straight from each store (the copies in `dataDirs`). */
async function directProofs(sides, dataDirs, pick) {
  const stores = {};
  let times;
  try {
    for (const kind of STORES) {
      stores[kind] = await sides[kind].open(dataDirs[kind]);
      for (let i = 0; i < Math.min(200, PROOFS); i++) await stores[kind].receipts.proof(pick()); // warm-up
    }
    times = await inSlices(PROOFS, async (kind) => {
      const id = pick();
      const started = performance.now();
      const found = await stores[kind].receipts.proof(id);
      const ms = performance.now() - started;
      if (found.state !== 'settled') throw new Error(`${kind}: no proof for ${id}: ${found.state}`);
      return ms;
    });
  } finally {
    for (const store of Object.values(stores)) await store.close();
  }
  for (const kind of STORES) {
    const direct = PROOFS > 0 ? percentiles(times[kind]) : null;
    if (direct) proofLine(kind, 'proof (store)', direct);
    results.by_store[kind].proofs = { settled_calls: CALLS, batch_cap: CAPS[CAPS.length - 1], direct, http: null };
  }
}

/** Proofs through a real control's indexer per store (each a cache miss). */
async function httpProofs(sides, dataDirs, pick) {
  const controls = {};
  let httpTimes;
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
    httpTimes = await inSlices(HTTP_PROOFS, get);
  } finally {
    for (const control of Object.values(controls)) await control.close();
  }
  for (const kind of STORES) {
    const http = percentiles(httpTimes[kind]);
    proofLine(kind, 'proof (HTTP, indexer)', http);
    results.by_store[kind].proofs.http = http;
  }
}

/** Step 4 on the settled copies in `dataDirs`; `callIds` are drawn from all settled calls. */
async function benchProofs(sides, dataDirs, callIds) {
  let next = 0;
  const pick = () => callIds[next++ % callIds.length];
  await directProofs(sides, dataDirs, pick);
  if (HTTP_PROOFS === 0) return;
  await httpProofs(sides, dataDirs, pick);
}

module.exports = { benchProofs };
