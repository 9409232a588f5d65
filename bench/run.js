#!/usr/bin/env node
'use strict';
/**
 * `npm run bench`: the gateway's data-plane cost on both proxy engines against bare proxies,
 * key revocation propagation, and gateway memory with 100k and 1M keys. See bench/README.md.
 *
 * CPU layout (2 cores): every server under test runs on CPU 0, alone while it is loaded; the
 * load generator (this process), the upstream and control share CPU 1.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { Proc, hasTaskset, nproc, clockTicks, pinSelf, memory, cpuStat, ourTicks, stopAll, killAllSync } = require('./lib/proc');
const { seedKeys } = require('./lib/seed');
const { Admin, http, startControl, ROOT } = require('./lib/svc');
const { measure, jsonBody } = require('./lib/load');
const { round } = require('./lib/stats');
const { FOREIGN_WARN_PCT, fmt, interleave, summarise, printSummary } = require('./lib/rounds');
const { snapshotDist } = require('./lib/app');
const { ENDPOINT, GATEWAY_ID, ENGINES, PROCESSES, BASELINES, params, log, sleep } = require('./lib/run-params');
const { bootGateway, expectStatus, heldPhase, threadSplit, revocation, profileGateway, profileBare } = require('./lib/gateway-runs');
const { largeKeys } = require('./lib/large-keys');
const { prepaidPhase } = require('./lib/prepaid');
const { evaluate } = require('./lib/run-report');

const RESULTS = path.join(__dirname, 'results', 'latest.json');

function machineInfo() {
  const git = (args) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return null;
    }
  };
  const dirty = git(['status', '--porcelain', '--', 'gateway', 'protocol', 'control', 'config', 'cli']);
  return {
    machine: {
      node: process.version,
      cpu_model: os.cpus()[0]?.model ?? 'unknown',
      nproc: nproc(),
      kernel: `${os.type()} ${os.release()}`,
      mem_total_mib: Math.round(os.totalmem() / 1048576),
      clk_tck: clockTicks(),
    },
    source: { commit: git(['rev-parse', 'HEAD']), modified: dirty ? dirty.split('\n').map((l) => l.trim()) : [] },
  };
}

/** Share (%) of all CPUs' time used by processes that are not ours, over `ms`. */
async function foreignLoad(ms) {
  const a = cpuStat();
  const o = ourTicks();
  await sleep(ms);
  const b = cpuStat();
  const all = b.cpu.all - a.cpu.all;
  return all > 0 ? round((Math.max(0, b.cpu.busy - a.cpu.busy - (ourTicks() - o)) / all) * 100, 1) : 0;
}

/**
 * With BENCH_QUIET_WAIT=s: before a measured run, wait (up to s seconds) until other
 * processes use less than FOREIGN_WARN_PCT of the machine for one second. Returns the wait.
 */
async function awaitQuiet() {
  if (params.quiet_wait_s === 0) return null;
  const started = Date.now();
  let load = await foreignLoad(1000);
  while (load > FOREIGN_WARN_PCT && Date.now() - started < params.quiet_wait_s * 1000) load = await foreignLoad(1000);
  return { waited_s: round((Date.now() - started) / 1000, 1), foreign_cpu_pct: load };
}

async function main() {
  const started = new Date();
  const info = machineInfo();
  /** @type {Record<string, any>} */
  const results = {
    timestamp: started.toISOString(),
    parameters: params,
    ...info,
    pinning: null,
    notes: [],
    runs: [],
    phases: {},
    threads: null,
    snapshot_loads: [],
    memory: {},
    revocation: {},
    large: {},
    profile: {},
    targets: [],
    errors: [],
  };
  const note = (text) => {
    results.notes.push(text);
    log(`! ${text}`);
  };

  // ---- CPU pinning -------------------------------------------------------------------
  let cpuServer = null;
  let cpuSide = null;
  let cpuControl = null;
  const cores = info.machine.nproc;
  if (!hasTaskset()) {
    note(
      'taskset not found: running UNPINNED (servers, upstream and load generator share all CPUs); numbers are not comparable to pinned runs',
    );
  } else if (cores < 2) {
    note(`only ${cores} CPU available: running UNPINNED`);
  } else {
    cpuServer = 0;
    cpuSide = 1;
    // Control commits every call's outcome (bench/README.md, "What the outcome pipeline costs
    // the tail"); with a third CPU it gets its own instead of sharing the load generator's.
    if (cores >= 3) cpuControl = 2;
    pinSelf(cpuSide);
  }
  cpuControl ??= cpuSide;
  results.pinning = { server_under_test_cpu: cpuServer, load_generator_upstream_cpu: cpuSide, control_cpu: cpuControl };
  const clkTck = info.machine.clk_tck;

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
  const logDir = path.join(tmp, 'logs');
  fs.mkdirSync(logDir);
  const keep = process.env.BENCH_KEEP_DATA === '1';
  snapshotDist(tmp);
  log(`svc bench — ${info.machine.cpu_model}, ${cores} CPU, node ${process.version}`);
  log(
    `params: ${params.rounds} rounds × ${params.duration_s}s, ${params.connections} connections, pipelining 1, ${params.body_bytes}-byte POST; response sizes ${params.response_sizes.join(', ') || 'none'} at ${params.size_connections} connections; work dir ${tmp}`,
  );

  const idle = await foreignLoad(2000);
  results.machine.foreign_cpu_pct_before_start = idle;
  if (idle > 5)
    note(
      `other processes use ${idle}% of the machine's CPU before the bench starts: throughput and latency will be noisy (CPU µs/req much less so); see foreign_cpu_pct per run`,
    );

  let failed = null;
  try {
    await run(results, { tmp, logDir, cpuServer, cpuSide, cpuControl, clkTck, note });
  } catch (err) {
    failed = err;
    results.errors.push(String(err && err.stack ? err.stack : err));
    log(`\nbench FAILED: ${err && err.stack ? err.stack : err}`);
  } finally {
    log('\nstopping all processes…');
    await stopAll();
    results.finished_at = new Date().toISOString();
    results.elapsed_s = round((Date.now() - started.getTime()) / 1000, 1);
    fs.mkdirSync(path.dirname(RESULTS), { recursive: true });
    fs.writeFileSync(RESULTS, JSON.stringify(results, null, 2) + '\n');
    log(`results written to ${path.relative(process.cwd(), RESULTS)} (${results.elapsed_s}s total)`);
    if (failed || keep) log(`work dir kept for inspection: ${tmp}`);
    else fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (failed) process.exitCode = 1;
  else if (process.env.BENCH_STRICT === '1' && results.targets.some((t) => !t.met)) process.exitCode = 3;
}

/**
 * The load and phase helpers of one bench run: `load` one target for some seconds, `phase` a
 * set of targets in interleaved rounds and summarise it.
 */
function loaders(results, { clkTck, note }) {
  const body = jsonBody(params.body_bytes);
  const load = (t, seconds, extra = {}) =>
    measure({ url: t.url, headers: t.headers, body, connections: params.connections, duration: seconds, pids: t.pids, clkTck, ...extra });
  const phase = async (name, targets, { rounds, seconds, connections = params.connections, around = (_t, run) => run() }) => {
    await interleave({
      phase: name,
      targets,
      rounds,
      seconds,
      warmup: params.warmup_s,
      load: (t, s) => around(t, () => load(t, s, { connections })),
      quiet: awaitQuiet,
      results,
      log,
      note,
    });
    return summarise(
      results.runs,
      name,
      targets,
      BASELINES.filter((b) => targets.some((t) => t.name === b)),
    );
  };
  return { body, load, phase };
}

/** 1. The upstream: its process, URL and the endpoint's base URL on it. */
async function startUpstream({ cpuSide, logDir }) {
  const upstream = new Proc('upstream', [process.execPath, path.join(__dirname, 'servers', 'upstream.js')], {
    cpu: cpuSide,
    log: path.join(logDir, 'upstream.log'),
  });
  const upstreamUrl = (await upstream.start()).urls.upstream;
  log(`upstream ${upstreamUrl} (pid ${upstream.pid}, cpu ${cpuSide ?? 'any'})`);
  return { upstream, upstreamBase: `${upstreamUrl}/api` };
}

/** 2. A data dir with N keys, control on it with the bench endpoint and the gate on, and two gateway processes per engine. */
async function startMainStack(results, { tmp, logDir, cpuServer, cpuControl }, upstreamBase) {
  const dataDir = path.join(tmp, 'main');
  fs.mkdirSync(dataDir, { mode: 0o700 });
  log(`seeding ${params.keys.toLocaleString('en')} keys…`);
  const seed = await seedKeys(path.join(dataDir, 'control.db'), params.keys, { withLoadKey: true, label: 'main' });
  log(`  ${seed.inserted.toLocaleString('en')} keys in ${seed.ms} ms (state version ${seed.version})`);
  results.seed = { keys: seed.inserted, ms: seed.ms };
  const auth = { authorization: `Bearer ${seed.loadKey.key}` };

  const control = startControl({ dataDir, cpu: cpuControl, logDir, name: 'control' });
  const controlUrl = (await control.start()).urls.control;
  const admin = new Admin(controlUrl, dataDir);
  const endpoint = await admin.addEndpoint(ENDPOINT, upstreamBase);
  const gate = await admin.setFlag('beta_gate_enabled', true);
  const wanted = Math.max(endpoint.version, gate.version);
  log(
    `control ${controlUrl} (pid ${control.pid}, cpu ${cpuControl ?? 'any'}); endpoint ${ENDPOINT} → ${upstreamBase} v${endpoint.version}, beta gate on v${gate.version}`,
  );

  // Started alternately, so a slow first process does not always land on the same engine.
  const gateways = [];
  for (const proc of PROCESSES) {
    for (const engine of ENGINES) {
      const name = `gateway-${engine}-${proc}`;
      const gw = await bootGateway({
        name,
        id: `${GATEWAY_ID}-${engine}-${proc}`,
        engine,
        dataDir,
        controlUrl,
        control,
        cpu: cpuServer,
        logDir,
        version: wanted,
        results,
        nodeArgs: params.gateway_node_args,
      });
      results.memory[`${name}_ready`] = { keys: params.keys, ...gw.memory };
      log(
        `${name} ${gw.url} (pid ${gw.proc.pid}) ready in ${gw.load.spawn_to_ready_ms} ms; RSS ${gw.memory.rss_mib} MiB with ${params.keys.toLocaleString('en')} keys`,
      );
      await expectStatus(`${name} with key`, `${gw.url}/v1/${ENDPOINT}/echo`, auth, 200);
      await expectStatus(`${name} without key (gate on)`, `${gw.url}/v1/${ENDPOINT}/echo`, {}, 403);
      gateways.push({ name, engine, proc, gw });
    }
  }
  return { dataDir, auth, loadKeyId: seed.loadKey.id, control, controlUrl, admin, wanted, gateways };
}

/**
 * 3. The baselines (bare http-proxy, bare undici; direct is the upstream), and `targetsFor`:
 * every target, loading the upstream path `suffix` (`echo`, or `size/<bytes>`).
 */
async function startBaselines({ cpuServer, logDir }, { upstream, upstreamBase }, { gateways, auth, control }) {
  const bare = new Proc('bare-http-proxy', [process.execPath, path.join(__dirname, 'servers', 'bare-proxy.js'), upstreamBase], {
    cpu: cpuServer,
    log: path.join(logDir, 'bare.log'),
  });
  const bareUrl = (await bare.start()).urls.proxy;
  const bareUndici = new Proc('bare-undici', [process.execPath, path.join(__dirname, 'servers', 'undici-proxy.js'), upstreamBase], {
    cpu: cpuServer,
    log: path.join(logDir, 'undici.log'),
  });
  const bareUndiciUrl = (await bareUndici.start()).urls.proxy;
  log(`bare http-proxy ${bareUrl} (pid ${bare.pid}), bare undici ${bareUndiciUrl} (pid ${bareUndici.pid})`);
  return (suffix) => [
    ...gateways.map((g) => ({
      name: g.name,
      group: `gateway-${g.engine}`,
      url: `${g.gw.url}/v1/${ENDPOINT}/${suffix}`,
      headers: auth,
      pids: { server: g.gw.proc.pid, upstream: upstream.pid, control: control.pid },
    })),
    {
      name: 'bare-http-proxy',
      group: 'bare-http-proxy',
      url: `${bareUrl}/${suffix}`,
      headers: {},
      pids: { server: bare.pid, upstream: upstream.pid },
    },
    {
      name: 'bare-undici',
      group: 'bare-undici',
      url: `${bareUndiciUrl}/${suffix}`,
      headers: {},
      pids: { server: bareUndici.pid, upstream: upstream.pid },
    },
    { name: 'direct', group: 'direct', url: `${upstreamBase}/${suffix}`, headers: {}, pids: { server: upstream.pid } },
  ];
}

/** 5. Response sizes at many connections, each size its own phase. */
async function sizePhases(results, { body, phase }, targetsFor) {
  for (const size of params.response_sizes) {
    const name = `size-${size}`;
    log(`\nresponse size ${size} bytes, ${params.size_connections} connections`);
    const targets = targetsFor(`size/${size}`);
    for (const t of targets) {
      const res = await http('POST', t.url, { headers: t.headers, json: JSON.parse(body) });
      if (res.status !== 200 || JSON.stringify(res.body).length !== size)
        throw new Error(`${t.name}: expected a ${size}-byte answer, got ${res.status}`);
    }
    results.phases[name] = {
      connections: params.size_connections,
      response_bytes: size,
      ...(await phase(name, targets, {
        rounds: params.size_rounds,
        seconds: params.size_duration_s,
        connections: params.size_connections,
      })),
    };
    printSummary(log, `medians across rounds, ${size}-byte answers, ${params.size_connections} connections`, results.phases[name]);
  }
}

/** 6. Revocation propagation, through each engine's gateway `a`. */
async function revocationPhase(results, { body }, { admin, gateways }) {
  for (const g of gateways.filter((x) => x.proc === 'a')) {
    const r = (results.revocation[g.engine] = await revocation({ admin, gatewayUrl: g.gw.url, count: params.revoke_keys, body }));
    log(
      `revocation → first 403 via ${g.name}, ${r.count} keys: p50 ${fmt(r.p50_ms, 2)} ms, p99 ${fmt(r.p99_ms, 2)} ms, max ${fmt(r.max_ms, 2)} ms (revoke call itself p50 ${fmt(r.revoke_call_p50_ms, 2)} ms)`,
    );
  }
}

async function run(results, env) {
  const { tmp, logDir, cpuServer } = env;
  const loader = loaders(results, env);
  const { load, phase } = loader;
  const up = await startUpstream(env);
  const stack = await startMainStack(results, env, up.upstreamBase);
  const { dataDir, auth, control, controlUrl, wanted, gateways } = stack;
  const targetsFor = await startBaselines(env, up, stack);
  const main = targetsFor('echo');
  for (const t of main.slice(gateways.length)) await expectStatus(t.name, t.url, {}, 200);

  // ---- 4. interleaved rounds: 76-byte answers, params.connections connections ----------
  log(`\nmain phase: ${params.connections} connections, ${params.body_bytes}-byte POST, 76-byte answer`);
  results.phases.main = {
    connections: params.connections,
    response_bytes: 76,
    ...(await phase('main', main, { rounds: params.rounds, seconds: params.duration_s })),
  };
  printSummary(
    log,
    `medians across rounds, ${params.connections} connections (server under test pinned to CPU 0; CPU = its utime+stime per request)`,
    results.phases.main,
  );
  for (const g of gateways) results.memory[`${g.name}_after_load`] = { keys: params.keys, ...memory(g.gw.proc.pid) };

  // ---- optional: CPU by thread ---------------------------------------------------------
  if (params.threads)
    results.threads = await threadSplit(
      main.filter((t) => t.name.endsWith('-a') || t.name.startsWith('bare-')),
      load,
    );

  // ---- optional: the gateways with the outcome pipeline held ---------------------------
  if (params.held) {
    results.phases.held = await heldPhase({ main, gateways, control, dataDir, phase });
    printSummary(
      log,
      `medians across rounds, ${params.connections} connections, control paused during each gateway run (outcomes held in the journal)`,
      results.phases.held,
    );
  }

  await sizePhases(results, loader, targetsFor);
  if (params.prepaid) await prepaidPhase(results, loader, stack, up);

  // ---- optional: CPU profile of each engine's gateway under the same load --------------
  if (params.profile) {
    for (const engine of ENGINES) {
      const args = { engine, dataDir, controlUrl, control, cpuServer, logDir, tmp, version: wanted, auth, load, results };
      results.profile[engine] = await profileGateway(args);
    }
    for (const [name, script] of [
      ['bare-http-proxy', 'bare-proxy.js'],
      ['bare-undici', 'undici-proxy.js'],
    ])
      results.profile[name] = await profileBare({ name, script, upstreamBase: up.upstreamBase, cpuServer, logDir, tmp, load, results });
  }
  if (params.revoke_keys > 0) await revocationPhase(results, loader, stack);
  if (params.keys_large > params.keys) await largeKeys(results, env, loader, up, stack);
  evaluate(results);
}

// ---- process lifecycle ---------------------------------------------------------------
process.on('exit', killAllSync);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    log(`\n${signal}: stopping…`);
    stopAll().finally(() => process.exit(130));
  });
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
