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
const { performance } = require('node:perf_hooks');
const { Pool } = require('undici');
const { Proc, hasTaskset, nproc, clockTicks, pinSelf, memory, cpuStat, ourTicks, cpuTicks, stopAll, killAllSync } = require('./lib/proc');
const { seedKeys, UNTHROTTLED } = require('./lib/seed');
const { Admin, http, startControl, startGateway, waitGatewayHealth, waitGatewayVersion, ROOT } = require('./lib/svc');
const { measure, jsonBody } = require('./lib/load');
const { median, percentile, round } = require('./lib/stats');
const { FOREIGN_WARN_PCT, fmt, table, interleave, summarise, printSummary } = require('./lib/rounds');
const { summarise: summariseProfile } = require('./lib/profile');
const { snapshotDist, distDir } = require('./lib/app');
const { envInt } = require('./lib/env');

const RESULTS = path.join(__dirname, 'results', 'latest.json');
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
  quiet_wait_s: envInt('BENCH_QUIET_WAIT', 0, 0),
  /** Node options for the gateway processes of phase 1, e.g. `--max-semi-space-size=32` (GC tuning A/B). */
  gateway_node_args: (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter((a) => a !== ''),
  upstream_max_sockets: 256,
};

/** Issue #13's targets (50 connections, paired CPU ratios), and the sync and memory ones of #3. */
const TARGETS = {
  undici_cpu_vs_bare_http_proxy_max: 1.0,
  undici_cpu_vs_bare_undici_max: 1.35,
  undici_p99_vs_bare_http_proxy_max: 1.0,
  undici_req_per_s_vs_bare_http_proxy_min: 1.0,
  http_proxy_cpu_vs_bare_http_proxy_max: 1.3,
  revocation_p99_ms_max: 100,
  rss_1m_mib_max: 400,
  req_per_s_1m_vs_10_min: 0.95,
};

const log = (msg) => process.stdout.write(`${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

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

/** One POST through `url`, returning the status (sanity checks before measuring). */
async function probe(url, headers = {}) {
  const res = await http('POST', url, { headers, json: JSON.parse(jsonBody(params.body_bytes)) });
  return res;
}

async function expectStatus(label, url, headers, status) {
  const res = await probe(url, headers);
  if (res.status !== status) throw new Error(`${label}: expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
}

async function main() {
  const started = new Date();
  const info = machineInfo();
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

async function run(results, { tmp, logDir, cpuServer, cpuSide, cpuControl, clkTck, note }) {
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

  // ---- 1. upstream -------------------------------------------------------------------
  const upstream = new Proc('upstream', [process.execPath, path.join(__dirname, 'servers', 'upstream.js')], {
    cpu: cpuSide,
    log: path.join(logDir, 'upstream.log'),
  });
  const upstreamUrl = (await upstream.start()).urls.upstream;
  const upstreamBase = `${upstreamUrl}/api`;
  log(`upstream ${upstreamUrl} (pid ${upstream.pid}, cpu ${cpuSide ?? 'any'})`);

  // ---- 2. data dir with N keys, control, two gateway processes per engine --------------
  const dataDir = path.join(tmp, 'main');
  fs.mkdirSync(dataDir, { mode: 0o700 });
  log(`seeding ${params.keys.toLocaleString('en')} keys…`);
  const seed = await seedKeys(path.join(dataDir, 'control.db'), params.keys, { withLoadKey: true, label: 'main' });
  log(`  ${seed.inserted.toLocaleString('en')} keys in ${seed.ms} ms (state version ${seed.version})`);
  results.seed = { keys: seed.inserted, ms: seed.ms };
  const auth = { authorization: `Bearer ${seed.loadKey.key}` };

  let control = startControl({ dataDir, cpu: cpuControl, logDir, name: 'control' });
  let controlUrl = (await control.start()).urls.control;
  let admin = new Admin(controlUrl, dataDir);
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

  // ---- 3. baselines ------------------------------------------------------------------
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

  /** Every target, loading the upstream path `suffix` (`echo`, or `size/<bytes>`). */
  const targetsFor = (suffix) => [
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

  // ---- 5. response sizes at many connections -----------------------------------------
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

  // ---- optional: CPU profile of each engine's gateway under the same load --------------
  if (params.profile) {
    for (const engine of ENGINES) {
      results.profile[engine] = await profileGateway({
        engine,
        dataDir,
        controlUrl,
        control,
        cpuServer,
        logDir,
        tmp,
        version: wanted,
        auth,
        load,
        results,
      });
    }
  }

  // ---- 6. revocation propagation, through each engine's gateway ------------------------
  if (params.revoke_keys > 0) {
    for (const g of gateways.filter((x) => x.proc === 'a')) {
      const r = (results.revocation[g.engine] = await revocation({ admin, gatewayUrl: g.gw.url, count: params.revoke_keys, body }));
      log(
        `revocation → first 403 via ${g.name}, ${r.count} keys: p50 ${fmt(r.p50_ms, 2)} ms, p99 ${fmt(r.p99_ms, 2)} ms, max ${fmt(r.max_ms, 2)} ms (revoke call itself p50 ${fmt(r.revoke_call_p50_ms, 2)} ms)`,
      );
    }
  }

  // ---- 7. memory and throughput with a large key set, on each engine -------------------
  if (params.keys_large > params.keys) {
    const extra = params.keys_large - params.keys;
    log(`\nlarge key set: stopping the gateways and control, inserting ${extra.toLocaleString('en')} more keys…`);
    for (const g of gateways) await g.gw.proc.stop();
    await control.stop();
    const more = await seedKeys(path.join(dataDir, 'control.db'), extra, { label: 'large' });
    log(`  ${more.inserted.toLocaleString('en')} keys in ${more.ms} ms (state version ${more.version})`);
    results.seed_large = { keys: more.inserted, ms: more.ms };

    control = startControl({ dataDir, cpu: cpuControl, logDir, name: 'control-large' });
    controlUrl = (await control.start()).urls.control;
    admin = new Admin(controlUrl, dataDir);
    const version = (await admin.call('GET', '/_admin/v1/flags')).version;

    // A second, separate stack with 10 keys, same upstream and endpoint.
    const smallDir = path.join(tmp, 'small');
    fs.mkdirSync(smallDir, { mode: 0o700 });
    const small = await seedKeys(path.join(smallDir, 'control.db'), 10, { withLoadKey: true, label: 'small' });
    const control10 = startControl({ dataDir: smallDir, cpu: cpuControl, logDir, name: 'control-10' });
    const control10Url = (await control10.start()).urls.control;
    const admin10 = new Admin(control10Url, smallDir);
    const ep10 = await admin10.addEndpoint(ENDPOINT, upstreamBase);
    const gate10 = await admin10.setFlag('beta_gate_enabled', true);
    const auth10 = { authorization: `Bearer ${small.loadKey.key}` };

    const pair = [];
    for (const engine of ENGINES) {
      const big = await bootGateway({
        name: `gateway-${engine}-large`,
        id: `${GATEWAY_ID}-${engine}-large`,
        engine,
        dataDir,
        controlUrl,
        control,
        cpu: cpuServer,
        logDir,
        version,
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
        dataDir: smallDir,
        controlUrl: control10Url,
        control: control10,
        cpu: cpuServer,
        logDir,
        version: Math.max(ep10.version, gate10.version),
        results,
      });
      results.memory[`gateway-${engine}-10_ready`] = { keys: 10, ...gw10.memory };
      const bigUrl = `${big.url}/v1/${ENDPOINT}/echo`;
      const smallUrl = `${gw10.url}/v1/${ENDPOINT}/echo`;
      await expectStatus(`large ${engine} gateway`, bigUrl, auth, 200);
      await expectStatus(`10-key ${engine} gateway`, smallUrl, auth10, 200);
      const label = big.keys >= 1e6 ? `${big.keys / 1e6}M` : String(big.keys);
      pair.push({
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
            headers: auth10,
            pids: { server: gw10.proc.pid },
          },
        ],
      });
    }
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

  evaluate(results);
}

/**
 * BENCH_HELD=1: each engine's gateway `a` and the bare http-proxy, interleaved, with control
 * paused (SIGSTOP) for the length of each gateway run, so nothing ships outcomes and control's
 * ingest does not run beside the load generator. The records wait in the journal; after the
 * run control resumes and the next run starts only once that gateway's backlog is shipped.
 * The difference to the main phase is what the outcome pipeline costs the latency measured here.
 */
async function heldPhase({ main, gateways, control, dataDir, phase }) {
  const held = main
    .filter((t) => t.name.endsWith('-a') && t.name.startsWith('gateway-'))
    .map((t) => ({
      ...t,
      name: `${t.name}-held`,
      group: `${t.group}-held`,
      gatewayUrl: gateways.find((g) => t.name === g.name).gw.url,
      pids: { server: t.pids.server, upstream: t.pids.upstream },
    }));
  const targets = [...held, main.find((t) => t.name === 'bare-http-proxy')];
  log(`\nheld phase: ${targets.map((t) => t.name).join(', ')}; control paused while a gateway is loaded`);
  return phase('held', targets, {
    rounds: params.rounds,
    seconds: params.duration_s,
    around: async (t, run) => {
      if (!t.gatewayUrl) return run();
      process.kill(control.pid, 'SIGSTOP');
      try {
        return await run();
      } finally {
        process.kill(control.pid, 'SIGCONT');
        await waitGatewayHealth(t.gatewayUrl, dataDir, (h) => h.journal_backlog === 0, 'journal backlog shipped', 120_000);
      }
    },
  });
}

/** One run per target with the server's CPU split by thread (BENCH_THREADS=1). */
async function threadSplit(targets, load) {
  log(`\nCPU by thread: one ${params.duration_s}s run per target (µs per request)`);
  const out = {};
  for (const t of targets) {
    const r = await load(t, params.duration_s, { threads: true });
    out[t.name] = { cpu_us_per_req: r.cpu_us_per_req, by_thread: r.cpu_us_per_req_by_thread };
    log(
      `  ${t.name.padEnd(22)} ${fmt(r.cpu_us_per_req).padStart(6)} total: ${Object.entries(r.cpu_us_per_req_by_thread)
        .map(([name, us]) => `${name} ${fmt(us)}`)
        .join(', ')}`,
    );
  }
  return out;
}

/** Start a gateway, wait until it enforces `version`, and record how long that took. */
async function bootGateway({ name, engine, dataDir, controlUrl, control, cpu, logDir, version, results, nodeArgs = [], id = GATEWAY_ID }) {
  const proc = startGateway({ dataDir, controlUrl, cpu, logDir, id, name, engine, nodeArgs });
  const events = {};
  proc.onLog((rec, at) => {
    if (rec.msg === 'gateway listening') events.listening = Date.parse(rec.time) || at;
    if (rec.msg === 'snapshot applied' && events.applied === undefined) {
      events.applied = Date.parse(rec.time) || at;
      events.keys = rec.keys;
    }
  });
  const sent = {};
  const off = control.onLog((rec) => {
    if (rec.msg === 'snapshot sent' && rec.gateway_id === id) Object.assign(sent, { ms: rec.ms, version: rec.version });
  });
  const controlTicks = cpuTicks(control.pid);
  const spawned = Date.now();
  const ready = await proc.start();
  const url = ready.urls.gateway;
  const { health, at } = await waitGatewayVersion(url, version, dataDir);
  off();
  if (health.engine !== engine) throw new Error(`${name}: asked for the ${engine} engine, the gateway runs ${health.engine}`);
  const tick = 1000 / clockTicks();
  const gatewayCpuMs = Math.round(cpuTicks(proc.pid) * tick);
  const controlCpuMs = Math.round((cpuTicks(control.pid) - controlTicks) * tick);
  await sleep(1000); // let the post-load garbage settle before reading RSS
  const mem = memory(proc.pid);
  const load = {
    gateway: name,
    engine,
    keys: events.keys ?? null,
    version: health.snapshot_version,
    spawn_to_ready_ms: at - spawned,
    listening_to_applied_ms: events.listening && events.applied ? events.applied - events.listening : null,
    control_snapshot_send_ms: sent.ms ?? null,
    gateway_cpu_ms: gatewayCpuMs,
    control_cpu_ms: controlCpuMs,
  };
  results.snapshot_loads.push(load);
  return { proc, url, load, memory: mem, keys: events.keys ?? null };
}

/** Issue keys, then per key: one admitted call, revoke, poll until the first 403. */
async function revocation({ admin, gatewayUrl, count, body }) {
  log(`\nrevocation propagation: issuing ${count} keys…`);
  const keys = [];
  let version = 0;
  for (let i = 0; i < count; i++) {
    const issued = await admin.issueKey({ name: `revoke-${i}`, limit: UNTHROTTLED });
    keys.push({ id: issued.id, key: issued.key });
    version = Math.max(version, issued.version);
  }
  const wait = await admin.waitSync(version);
  if (!wait.complete) throw new Error(`gateway did not apply v${version}: ${JSON.stringify(wait)}`);
  const pool = new Pool(gatewayUrl, { connections: 1, pipelining: 1 });
  const url = `/v1/${ENDPOINT}/echo`;
  const call = async (key) => {
    const res = await pool.request({
      path: url,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body,
    });
    await res.body.dump();
    return res.statusCode;
  };
  const samples = [];
  const unexpected = {};
  try {
    for (const { id, key } of keys) {
      const first = await call(key);
      if (first !== 200) throw new Error(`key ${id}: expected 200 before revocation, got ${first}`);
      const t0 = performance.now();
      let revokeDone = null;
      const revoking = admin.revokeKey(id).then((r) => {
        revokeDone = performance.now();
        return r;
      });
      let polls = 0;
      let t1 = null;
      for (;;) {
        const status = await call(key);
        polls++;
        if (status === 403) {
          t1 = performance.now();
          break;
        }
        if (status !== 200) unexpected[status] = (unexpected[status] ?? 0) + 1;
        if (performance.now() - t0 > 30_000) throw new Error(`key ${id} still admitted 30 s after revoke`);
      }
      await revoking;
      samples.push({ id, ms: round(t1 - t0, 3), polls, revoke_call_ms: round(revokeDone - t0, 3) });
    }
  } finally {
    await pool.close();
  }
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const calls = samples.map((s) => s.revoke_call_ms).sort((a, b) => a - b);
  return {
    count: samples.length,
    p50_ms: percentile(ms, 50),
    p99_ms: percentile(ms, 99),
    max_ms: ms[ms.length - 1],
    min_ms: ms[0],
    revoke_call_p50_ms: percentile(calls, 50),
    revoke_call_p99_ms: percentile(calls, 99),
    polls_median: median(samples.map((s) => s.polls)),
    unexpected_statuses: unexpected,
    samples,
  };
}

/** One more gateway on `engine` on the same control, under `node --cpu-prof`, for one load run. */
async function profileGateway({ engine, dataDir, controlUrl, control, cpuServer, logDir, tmp, version, auth, load, results }) {
  const dir = path.join(tmp, `cpuprof-${engine}`);
  fs.mkdirSync(dir, { recursive: true });
  const id = `${GATEWAY_ID}-${engine}-prof`;
  log(`\nprofiling: a gateway on ${engine} under --cpu-prof, one ${params.duration_s}s run`);
  const gw = await bootGateway({
    name: `gateway-${engine}-prof`,
    engine,
    dataDir,
    controlUrl,
    control,
    cpu: cpuServer,
    logDir,
    version,
    results,
    id,
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  });
  const target = { name: `gateway-${engine}-profiled`, url: `${gw.url}/v1/${ENDPOINT}/echo`, headers: auth, pids: { server: gw.proc.pid } };
  await load(target, Math.max(1, params.warmup_s));
  const from = Number(process.hrtime.bigint() / 1000n);
  const r = await load(target, params.duration_s);
  const to = Number(process.hrtime.bigint() / 1000n);
  results.runs.push({ phase: 'profile', round: 1, target: target.name, ...r });
  await gw.proc.stop();
  const file = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(dir, f))[0];
  if (!file) throw new Error('no .cpuprofile written by the profiled gateway');
  const keepAs = path.join(__dirname, 'results', `gateway-${engine}.cpuprofile`);
  fs.copyFileSync(file, keepAs);
  const summary = summariseProfile(file, { top: 25, root: path.dirname(distDir()), windowUs: [from, to] });
  log(
    `  ${fmt(r.req_per_s, 0)} req/s under the profiler; ${summary.samples} samples in the load window, GC ${summary.gc_pct_of_busy}% of busy`,
  );
  for (const row of summary.top.slice(0, 20)) log(`  ${String(row.busy_pct).padStart(5)}%  ${row.function}`);
  log('  by file:');
  for (const row of summary.files.slice(0, 10)) log(`  ${String(row.busy_pct).padStart(5)}%  ${row.file}`);
  log(`  profile saved to ${path.relative(process.cwd(), keepAs)}`);
  return { run: r, file: path.relative(ROOT, keepAs), ...summary };
}

function evaluate(results) {
  const t = [];
  const add = (name, value, limit, met, unit = '') =>
    t.push({ name, value, limit, unit, met: value === null || value === undefined ? false : met });
  const main = results.phases.main;
  const r = (name) => main?.ratios[name];
  const undiciVsBare = r('gateway-undici/bare-http-proxy');
  const undiciVsUndici = r('gateway-undici/bare-undici');
  const hpVsBare = r('gateway-http-proxy/bare-http-proxy');
  if (undiciVsBare) {
    add(
      'gateway (undici) CPU µs/req ≤ 1.0× bare http-proxy (paired)',
      undiciVsBare.cpu_us_per_req_paired,
      TARGETS.undici_cpu_vs_bare_http_proxy_max,
      undiciVsBare.cpu_us_per_req_paired <= TARGETS.undici_cpu_vs_bare_http_proxy_max,
      '×',
    );
    add(
      'gateway (undici) p99 ≤ bare http-proxy p99',
      undiciVsBare.p99_ms,
      TARGETS.undici_p99_vs_bare_http_proxy_max,
      undiciVsBare.p99_ms <= TARGETS.undici_p99_vs_bare_http_proxy_max,
      '×',
    );
    add(
      'gateway (undici) req/s ≥ bare http-proxy req/s',
      undiciVsBare.req_per_s,
      TARGETS.undici_req_per_s_vs_bare_http_proxy_min,
      undiciVsBare.req_per_s >= TARGETS.undici_req_per_s_vs_bare_http_proxy_min,
      '×',
    );
  }
  if (undiciVsUndici)
    add(
      'gateway (undici) CPU µs/req ≤ 1.35× bare undici (paired)',
      undiciVsUndici.cpu_us_per_req_paired,
      TARGETS.undici_cpu_vs_bare_undici_max,
      undiciVsUndici.cpu_us_per_req_paired <= TARGETS.undici_cpu_vs_bare_undici_max,
      '×',
    );
  if (hpVsBare)
    add(
      'gateway (http-proxy) CPU µs/req ≤ 1.3× bare http-proxy (paired)',
      hpVsBare.cpu_us_per_req_paired,
      TARGETS.http_proxy_cpu_vs_bare_http_proxy_max,
      hpVsBare.cpu_us_per_req_paired <= TARGETS.http_proxy_cpu_vs_bare_http_proxy_max,
      '×',
    );
  const non2xx = results.runs.reduce((s, x) => s + x.non2xx + x.errors, 0);
  add('no non-2xx answers or errors in any run', non2xx, 0, non2xx === 0);
  for (const [engine, rev] of Object.entries(results.revocation))
    add(
      `revocation → first 403 p99 < 100 ms (${engine})`,
      rev.p99_ms,
      TARGETS.revocation_p99_ms_max,
      rev.p99_ms < TARGETS.revocation_p99_ms_max,
      'ms',
    );
  for (const engine of ENGINES) {
    for (const when of ['ready', 'after_load']) {
      const m = results.memory[`gateway-${engine}-large_${when}`];
      if (m)
        add(
          `gateway RSS < 400 MiB with ${m.keys} keys (${engine}, ${when === 'ready' ? 'ready' : 'after the comparison runs'})`,
          m.rss_mib,
          TARGETS.rss_1m_mib_max,
          m.rss_mib < TARGETS.rss_1m_mib_max,
          'MiB',
        );
    }
    const l = results.large[engine];
    if (l)
      add(
        `no req/s loss with the large key set, ≥ 0.95× the 10-key gateway (${engine}; two processes, see the spread)`,
        l.ratio_req_per_s,
        TARGETS.req_per_s_1m_vs_10_min,
        l.ratio_req_per_s >= TARGETS.req_per_s_1m_vs_10_min,
        '×',
      );
  }
  results.targets = t;
  const noisy = results.runs.filter((x) => (x.machine?.foreign_cpu_pct ?? 0) > FOREIGN_WARN_PCT);
  if (noisy.length > 0) {
    const worst = Math.max(...noisy.map((x) => x.machine.foreign_cpu_pct));
    results.notes.push(
      `${noisy.length} of ${results.runs.length} runs shared the machine with other processes (up to ${worst}% of all CPU time); req/s and latency of those runs are not reliable, CPU µs/req is`,
    );
    log(`\n! ${results.notes.at(-1)}`);
  }
  log('\ntargets');
  for (const x of t)
    log(
      `  ${x.met ? 'met   ' : 'MISSED'}  ${x.name}: ${fmt(x.value, x.unit === '×' ? 3 : 1)}${x.unit === '×' ? '×' : x.unit ? ` ${x.unit}` : ''}`,
    );
  log('\nsnapshot loads');
  for (const l of results.snapshot_loads)
    log(
      `  ${l.gateway.padEnd(26)} ${String(l.keys).padStart(8)} keys: spawn → enforcing ${l.spawn_to_ready_ms} ms, listening → applied ${l.listening_to_applied_ms ?? '—'} ms, control streamed it in ${l.control_snapshot_send_ms ?? '—'} ms; CPU: gateway ${l.gateway_cpu_ms} ms, control ${l.control_cpu_ms} ms`,
    );
  log('gateway memory');
  for (const [k, m] of Object.entries(results.memory))
    log(`  ${k.padEnd(36)} ${String(m.keys).padStart(8)} keys: RSS ${m.rss_mib} MiB, peak ${m.hwm_mib} MiB`);
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
