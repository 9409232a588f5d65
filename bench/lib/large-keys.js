'use strict';
/**
 * Phase 7 of `npm run bench` (run.js): memory and throughput with a large key set, on each engine.
 * The main stack stops, the large set goes into its database, control restarts, and a fresh
 * gateway per engine loads it; beside it a separate 10-key stack, and both are loaded
 * interleaved.
 */
const fs = require('node:fs');
const path = require('node:path');
const { memory } = require('./proc');
const { seedKeys } = require('./seed');
const { Admin, startControl } = require('./svc');
const { round } = require('./stats');
const { fmt, table } = require('./rounds');
const { ENDPOINT, GATEWAY_ID, ENGINES, params, log } = require('./run-params');
const { bootGateway, expectStatus } = require('./gateway-runs');

/** Stop the main stack, add the large key set to its database, and restart control on it. */
async function restartLarge(results, { logDir, cpuControl }, stack) {
  const { dataDir, gateways, control: old } = stack;
  const extra = params.keys_large - params.keys;
  log(`\nlarge key set: stopping the gateways and control, inserting ${extra.toLocaleString('en')} more keys…`);
  for (const g of gateways) await g.gw.proc.stop();
  await old.stop();
  const more = await seedKeys(path.join(dataDir, 'control.db'), extra, { label: 'large' });
  log(`  ${more.inserted.toLocaleString('en')} keys in ${more.ms} ms (state version ${more.version})`);
  results.seed_large = { keys: more.inserted, ms: more.ms };

  const control = startControl({ dataDir, cpu: cpuControl, logDir, name: 'control-large' });
  const controlUrl = (await control.start()).urls.control;
  const admin = new Admin(controlUrl, dataDir);
  const version = (await admin.call('GET', '/_admin/v1/flags')).version;
  return { dataDir, control, controlUrl, version };
}

/** A second, separate stack with 10 keys, same upstream and endpoint. */
async function smallStack({ tmp, logDir, cpuControl }, upstreamBase) {
  const smallDir = path.join(tmp, 'small');
  fs.mkdirSync(smallDir, { mode: 0o700 });
  const small = await seedKeys(path.join(smallDir, 'control.db'), 10, { withLoadKey: true, label: 'small' });
  const control = startControl({ dataDir: smallDir, cpu: cpuControl, logDir, name: 'control-10' });
  const controlUrl = (await control.start()).urls.control;
  const admin = new Admin(controlUrl, smallDir);
  const ep = await admin.addEndpoint(ENDPOINT, upstreamBase);
  const gate = await admin.setFlag('beta_gate_enabled', true);
  const auth = { authorization: `Bearer ${small.loadKey.key}` };
  return { dataDir: smallDir, control, controlUrl, version: Math.max(ep.version, gate.version), auth };
}

/** On `engine`: a gateway on the large stack and one on the 10-key stack, checked, and their two targets. */
async function bootPair(results, { logDir, cpuServer }, engine, large, small, auth) {
  const big = await bootGateway({
    name: `gateway-${engine}-large`,
    id: `${GATEWAY_ID}-${engine}-large`,
    engine,
    dataDir: large.dataDir,
    controlUrl: large.controlUrl,
    control: large.control,
    cpu: cpuServer,
    logDir,
    version: large.version,
    results,
  });
  results.memory[`gateway-${engine}-large_ready`] = { keys: big.keys, ...big.memory };
  log(
    `gateway-${engine} with ${big.keys.toLocaleString('en')} live keys ready in ${big.load.spawn_to_ready_ms} ms (snapshot applied ${big.load.listening_to_applied_ms} ms after listening); RSS ${big.memory.rss_mib} MiB, peak ${big.memory.hwm_mib} MiB`,
  );
  const gw10 = await bootGateway({
    name: `gateway-${engine}-10`,
    id: `${GATEWAY_ID}-${engine}-10`,
    engine,
    dataDir: small.dataDir,
    controlUrl: small.controlUrl,
    control: small.control,
    cpu: cpuServer,
    logDir,
    version: small.version,
    results,
  });
  results.memory[`gateway-${engine}-10_ready`] = { keys: 10, ...gw10.memory };
  const bigUrl = `${big.url}/v1/${ENDPOINT}/echo`;
  const smallUrl = `${gw10.url}/v1/${ENDPOINT}/echo`;
  await expectStatus(`large ${engine} gateway`, bigUrl, auth, 200);
  await expectStatus(`10-key ${engine} gateway`, smallUrl, small.auth, 200);
  const label = big.keys >= 1e6 ? `${big.keys / 1e6}M` : String(big.keys);
  return {
    engine,
    big,
    gw10,
    keys: big.keys,
    targets: [
      {
        name: `gateway-${engine}-${label}-keys`,
        group: `gateway-${engine}-${label}-keys`,
        url: bigUrl,
        headers: auth,
        pids: { server: big.proc.pid },
      },
      {
        name: `gateway-${engine}-10-keys`,
        group: `gateway-${engine}-10-keys`,
        url: smallUrl,
        headers: small.auth,
        pids: { server: gw10.proc.pid },
      },
    ],
  };
}

async function largeKeys(results, env, { phase }, { upstreamBase }, stack) {
  const large = await restartLarge(results, env, stack);
  const small = await smallStack(env, upstreamBase);
  const pair = [];
  for (const engine of ENGINES) pair.push(await bootPair(results, env, engine, large, small, stack.auth));
  log(`\nlarge vs 10 keys`);
  const summary = await phase(
    'large',
    pair.flatMap((p) => p.targets),
    { rounds: params.compare_rounds, seconds: params.compare_duration_s },
  );
  for (const p of pair) {
    results.memory[`gateway-${p.engine}-large_after_load`] = { keys: p.keys, ...memory(p.big.proc.pid) };
    results.memory[`gateway-${p.engine}-10_after_load`] = { keys: 10, ...memory(p.gw10.proc.pid) };
    const [a, b] = p.targets.map((t) => summary.medians[t.name]);
    results.large[p.engine] = {
      keys: p.keys,
      medians: Object.fromEntries(p.targets.map((t) => [t.name, summary.medians[t.name]])),
      ratio_req_per_s: a.req_per_s && b.req_per_s ? round(a.req_per_s / b.req_per_s, 3) : null,
      ratio_cpu_us_per_req: a.cpu_us_per_req && b.cpu_us_per_req ? round(a.cpu_us_per_req / b.cpu_us_per_req, 3) : null,
      ratio_p99: a.p99_ms && b.p99_ms ? round(a.p99_ms / b.p99_ms, 3) : null,
    };
  }
  log(
    table(
      pair
        .flatMap((p) => p.targets)
        .map((t) => {
          const m = summary.medians[t.name];
          return [t.name, fmt(m.req_per_s, 0), fmt(m.p50_ms, 2), fmt(m.p99_ms, 2), fmt(m.cpu_us_per_req)];
        }),
      ['target (medians)', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req'],
    ),
  );
  for (const p of pair) {
    const l = results.large[p.engine];
    log(
      `${p.engine}: ${p.keys.toLocaleString('en')} keys / 10 keys: req/s ${fmt(l.ratio_req_per_s, 3)}, CPU ${fmt(l.ratio_cpu_us_per_req, 3)}, p99 ${fmt(l.ratio_p99, 3)}`,
    );
  }
}

module.exports = { largeKeys };
