'use strict';
/**
 * Step 3 of the settlement bench: settle copies of each store's base at each batch cap, without
 * and with receipts, then `ledger verify` on the signed copy and the receipts backfill on the
 * unsigned one.
 */
const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { CALLS, CAPS, DIST, ROUNDS, STORES, TARGETS, results } = require('./params');
const { cpuPerCall, line, measured, statementsFrom, statementsOf, stepResult, zeroCost } = require('./measure');
const { silentLogger } = require('./sides');
const { internal } = require('../lib/internals');
const { roundOrder } = require('../lib/postgres');

const { Settler } = internal('control/settler/settler', DIST);

/** One settle run on a fresh copy of `side`'s base (the copy is left open: `s`). */
async function settleRun(side, copyDir, cap, receipts) {
  const kind = side.kind;
  fs.mkdirSync(copyDir);
  fs.copyFileSync(path.join(side.baseDir, 'receipt-signing.key'), path.join(copyDir, 'receipt-signing.key'));
  await side.copy(copyDir);
  const s = await side.open(copyDir, { receipts });
  const settler = await Settler.open({ store: s, log: silentLogger, now: Date.now, cadenceMs: 3_600_000, batchCap: cap });
  const cost = zeroCost();
  const done = await measured(side, cost, () => settler.runOnce());
  if (done.calls !== CALLS || done.backlog !== 0) throw new Error(`${kind}: settled ${done.calls} of ${CALLS}`);
  const signedCount = await s.receipts.count();
  if (signedCount !== (receipts ? done.batches.length : 0))
    throw new Error(`${kind}: ${signedCount} receipts for ${done.batches.length} batches`);
  const label = `settle (cap ${cap.toLocaleString('en')}, ${receipts ? 'receipts' : 'no receipts'})`;
  line(kind, label, CALLS, cost.ms, undefined, cpuPerCall(cost, CALLS));
  return { s, copyDir, ms: cost.ms, cost, batches: done.batches.length };
}

/**
 * Side by side: without and with receipts in alternating order, ROUNDS times each, and with both
 * stores each round on both, in alternating order. Every copy but the last round's is dropped.
 */
async function settleRounds(sides, dir, cap) {
  let copies = 0;
  const plainRuns = Object.fromEntries(STORES.map((k) => [k, []]));
  const signedRuns = Object.fromEntries(STORES.map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of roundOrder(STORES, round)) {
      for (const receipts of round % 2 === 0 ? [false, true] : [true, false]) {
        const copyDir = path.join(dir, `settle-${kind}-${cap}-${receipts ? 'receipts' : 'plain'}-${++copies}`);
        const r = await settleRun(sides[kind], copyDir, cap, receipts);
        (receipts ? signedRuns : plainRuns)[kind].push(r);
        await r.s.close();
        if (round < ROUNDS - 1) await sides[kind].drop(r.copyDir);
      }
    }
  }
  return { plainRuns, signedRuns };
}

/** `ledger verify` on the signed copy; answers its time. */
async function verifyLedger(side, copyDir) {
  const verifyStore = await side.open(copyDir);
  const verifyStarted = performance.now();
  const verify = await verifyStore.ledger.verify();
  const verifyMs = performance.now() - verifyStarted;
  await verifyStore.close();
  if (!verify.ok) throw new Error(`${side.kind}: ledger verify failed: ${verify.violation}`);
  console.log(
    `${side.kind.padEnd(8)} ${'  ledger verify afterwards'.padEnd(34)} ${(verifyMs / 1000).toFixed(2)} s, ok (${verify.checks.length} checks, receipts included)`,
  );
  return verifyMs;
}

/** What a store opening an install settled before receipts does: sign every batch, in one transaction. */
async function backfill(side, unsigned) {
  const backfillStarted = performance.now();
  const reopened = await side.open(unsigned.copyDir);
  const backfillMs = performance.now() - backfillStarted;
  if ((await reopened.receipts.count()) !== unsigned.batches) throw new Error(`${side.kind}: backfill missed batches`);
  await reopened.close();
  console.log(
    `${side.kind.padEnd(8)} ${'  backfill on open (no receipts →)'.padEnd(34)} ${(backfillMs / 1000).toFixed(2)} s for ${unsigned.batches} batches`,
  );
  await side.drop(unsigned.copyDir);
  return backfillMs;
}

const best = (runs) => runs.reduce((a, b) => (b.ms < a.ms ? b : a));

/** One store's runs at `cap`: the best of each kind (the machine's capacity, least disturbed by other load), verify, backfill. Answers the signed copy's dir. */
async function reportCap(side, cap, plainRuns, signedRuns) {
  const kind = side.kind;
  const plain = best(plainRuns);
  const signedBest = best(signedRuns);
  const perSPlain = line(kind, `  best without receipts`, CALLS, plain.ms, undefined, cpuPerCall(plain.cost, CALLS));
  const perS = line(
    kind,
    `  best with receipts (${signedBest.batches} batches)`,
    CALLS,
    signedBest.ms,
    TARGETS.settle_per_s,
    cpuPerCall(signedBest.cost, CALLS),
  );
  console.log(
    `${kind.padEnd(8)} ${'  receipts cost'.padEnd(34)} ${(((signedBest.ms - plain.ms) / plain.ms) * 100).toFixed(1)} % of the time without`,
  );
  const signed = signedRuns[signedRuns.length - 1];
  const verifyMs = await verifyLedger(side, signed.copyDir);
  const backfillMs = await backfill(side, plainRuns[plainRuns.length - 1]);
  const settle = (results.by_store[kind].settle ??= []);
  settle.push({
    batch_cap: cap,
    batches: signed.batches,
    rounds: ROUNDS,
    ...stepResult(CALLS, signedBest.cost, perS),
    runs_ms: signedRuns.map((r) => Math.round(r.ms)),
    runs_cpu_us: signedRuns.map((r) => cpuPerCall(r.cost, CALLS).cpu_us),
    without_receipts: {
      ...stepResult(CALLS, plain.cost, perSPlain),
      runs_ms: plainRuns.map((r) => Math.round(r.ms)),
      runs_cpu_us: plainRuns.map((r) => cpuPerCall(r.cost, CALLS).cpu_us),
    },
    verify_ms: Math.round(verifyMs),
    backfill_ms: Math.round(backfillMs),
  });
  return signed.copyDir;
}

/** Step 3, every cap in turn. Answers the last cap's signed copy per store. */
async function benchSettle(sides, dir) {
  const lastSigned = {};
  for (const cap of CAPS) {
    await statementsFrom(sides);
    const { plainRuns, signedRuns } = await settleRounds(sides, dir, cap);
    await statementsOf(sides, `settle (cap ${cap.toLocaleString('en')}, every run)`);
    for (const kind of STORES) {
      const signedDir = await reportCap(sides[kind], cap, plainRuns[kind], signedRuns[kind]);
      if (lastSigned[kind]) await sides[kind].drop(lastSigned[kind]);
      lastSigned[kind] = signedDir;
    }
  }
  return lastSigned;
}

module.exports = { benchSettle };
