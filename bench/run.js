#!/usr/bin/env node
'use strict';
/**
 * `npm run bench`: the gateway's data-plane cost against bare proxies, key revocation
 * propagation, and gateway memory with 100k and 1M keys. See bench/README.md.
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
const { Admin, http, startControl, startGateway, waitGatewayVersion, ROOT } = require('./lib/svc');
const { measure, jsonBody } = require('./lib/load');
const { median, percentile, round, ratio } = require('./lib/stats');
const { summarise } = require('./lib/profile');
const { snapshotDist, distDir } = require('./lib/app');

const RESULTS = path.join(__dirname, 'results', 'latest.json');
const ENDPOINT = 'bench';
const GATEWAY_ID = 'bench-gw';

function envInt(name, fallback, min = 0) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

const duration = envInt('BENCH_DURATION', 10, 1);
const params = {
  duration_s: duration,
  rounds: envInt('BENCH_ROUNDS', 3, 1),
  connections: envInt('BENCH_CONNECTIONS', 50, 1),
  pipelining: 1,
  warmup_s: envInt('BENCH_WARMUP', 3, 0),
  body_bytes: 200,
  keys: envInt('BENCH_KEYS', 100_000, 1),
  keys_large: envInt('BENCH_KEYS_LARGE', 1_000_000, 0),
  revoke_keys: envInt('BENCH_REVOKE_KEYS', 100, 0),
  compare_rounds: envInt('BENCH_COMPARE_ROUNDS', 2, 1),
  compare_duration_s: envInt('BENCH_COMPARE_DURATION', Math.max(3, Math.round(duration / 2)), 1),
  profile: process.env.BENCH_PROFILE === '1',
  quiet_wait_s: envInt('BENCH_QUIET_WAIT', 0, 0),
  upstream_max_sockets: 256,
};

const TARGETS = {
  cpu_vs_bare_max: 1.1,
  req_per_s_vs_bare_min: 0.9,
  p99_vs_bare_max: 1.2,
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

const FOREIGN_WARN_PCT = 5;

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

function runLine(label, r) {
  const foreign = r.machine.foreign_cpu_pct;
  return `  ${label} ${fmt(r.req_per_s, 0).padStart(7)} req/s  p50 ${fmt(r.p50_ms, 2)} ms  p99 ${fmt(r.p99_ms, 2)} ms  cpu ${fmt(r.cpu_us_per_req)} µs/req  non-2xx ${r.non2xx}  errors ${r.errors}${foreign > FOREIGN_WARN_PCT ? `  [other processes: ${foreign}% CPU]` : ''}`;
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

function fmt(v, digits = 1) {
  return v === null || v === undefined ? '—' : Number(v).toFixed(digits);
}

function table(rows, headers) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
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
    medians: {},
    ratios: {},
    spread: {},
    snapshot_loads: [],
    memory: {},
    revocation: null,
    large: null,
    profile: null,
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
  const cores = info.machine.nproc;
  if (!hasTaskset()) {
    note('taskset not found: running UNPINNED (servers, upstream and load generator share all CPUs); numbers are not comparable to pinned runs');
  } else if (cores < 2) {
    note(`only ${cores} CPU available: running UNPINNED`);
  } else {
    cpuServer = 0;
    cpuSide = 1;
    pinSelf(cpuSide);
  }
  results.pinning = { server_under_test_cpu: cpuServer, load_generator_upstream_control_cpu: cpuSide };
  const clkTck = info.machine.clk_tck;

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
  const logDir = path.join(tmp, 'logs');
  fs.mkdirSync(logDir);
  const keep = process.env.BENCH_KEEP_DATA === '1';
  snapshotDist(tmp);
  log(`svc bench — ${info.machine.cpu_model}, ${cores} CPU, node ${process.version}`);
  log(`params: ${params.rounds} rounds × ${params.duration_s}s, ${params.connections} connections, pipelining 1, ${params.body_bytes}-byte POST; work dir ${tmp}`);

  const idle = await foreignLoad(2000);
  results.machine.foreign_cpu_pct_before_start = idle;
  if (idle > 5) note(`other processes use ${idle}% of the machine's CPU before the bench starts: throughput and latency will be noisy (CPU µs/req much less so); see foreign_cpu_pct per run`);

  let failed = null;
  try {
    await run(results, { tmp, logDir, cpuServer, cpuSide, clkTck, note });
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

async function run(results, { tmp, logDir, cpuServer, cpuSide, clkTck, note }) {
  const body = jsonBody(params.body_bytes);

  // ---- 1. upstream -------------------------------------------------------------------
  const upstream = new Proc('upstream', [process.execPath, path.join(__dirname, 'servers', 'upstream.js')], { cpu: cpuSide, log: path.join(logDir, 'upstream.log') });
  const upstreamUrl = (await upstream.start()).urls.upstream;
  const upstreamBase = `${upstreamUrl}/api`;
  log(`upstream ${upstreamUrl} (pid ${upstream.pid}, cpu ${cpuSide ?? 'any'})`);

  // ---- 2. data dir with N keys, control, gateway --------------------------------------
  const dataDir = path.join(tmp, 'main');
  fs.mkdirSync(dataDir, { mode: 0o700 });
  log(`seeding ${params.keys.toLocaleString('en')} keys…`);
  const seed = seedKeys(path.join(dataDir, 'control.db'), params.keys, { withLoadKey: true, label: 'main' });
  log(`  ${seed.inserted.toLocaleString('en')} keys in ${seed.ms} ms (state version ${seed.version})`);
  results.seed = { keys: seed.inserted, ms: seed.ms };
  const loadKey = seed.loadKey;
  const auth = { authorization: `Bearer ${loadKey.key}` };

  let control = startControl({ dataDir, cpu: cpuSide, logDir, name: 'control' });
  let controlUrl = (await control.start()).urls.control;
  let admin = new Admin(controlUrl, dataDir);
  const endpoint = await admin.addEndpoint(ENDPOINT, upstreamBase);
  const gate = await admin.setFlag('beta_gate_enabled', true);
  const wanted = Math.max(endpoint.version, gate.version);
  log(`control ${controlUrl} (pid ${control.pid}); endpoint ${ENDPOINT} → ${upstreamBase} v${endpoint.version}, beta gate on v${gate.version}`);

  let gateway = await bootGateway({ name: 'gateway', dataDir, controlUrl, control, cpu: cpuServer, logDir, version: wanted, results });
  results.memory.gateway_main_ready = { keys: params.keys, ...gateway.memory };
  log(`gateway ${gateway.url} (pid ${gateway.proc.pid}) ready in ${gateway.load.spawn_to_ready_ms} ms; RSS ${gateway.memory.rss_mib} MiB with ${params.keys.toLocaleString('en')} keys`);

  const gwUrl = `${gateway.url}/v1/${ENDPOINT}/echo`;
  await expectStatus('gateway with key', gwUrl, auth, 200);
  await expectStatus('gateway without key (gate on)', gwUrl, {}, 403);

  // ---- 3. baselines ------------------------------------------------------------------
  const bare = new Proc('bare-http-proxy', [process.execPath, path.join(__dirname, 'servers', 'bare-proxy.js'), upstreamBase], { cpu: cpuServer, log: path.join(logDir, 'bare.log') });
  const bareUrl = (await bare.start()).urls.proxy;
  const undici = new Proc('undici', [process.execPath, path.join(__dirname, 'servers', 'undici-proxy.js'), upstreamBase], { cpu: cpuServer, log: path.join(logDir, 'undici.log') });
  const undiciUrl = (await undici.start()).urls.proxy;
  log(`bare http-proxy ${bareUrl} (pid ${bare.pid}), undici ${undiciUrl} (pid ${undici.pid})`);

  const targets = [
    { name: 'gateway', url: gwUrl, headers: auth, pids: { server: gateway.proc.pid, upstream: upstream.pid, control: control.pid } },
    { name: 'bare-http-proxy', url: `${bareUrl}/echo`, headers: {}, pids: { server: bare.pid, upstream: upstream.pid } },
    { name: 'undici', url: `${undiciUrl}/echo`, headers: {}, pids: { server: undici.pid, upstream: upstream.pid } },
    { name: 'direct', url: `${upstreamBase}/echo`, headers: {}, pids: { server: upstream.pid } },
  ];
  for (const t of targets.slice(1)) await expectStatus(t.name, t.url, {}, 200);

  // ---- 4. interleaved rounds ---------------------------------------------------------
  const loadOpts = (t, seconds) => ({ url: t.url, headers: t.headers, body, connections: params.connections, duration: seconds, pids: t.pids, clkTck });
  if (params.warmup_s > 0) {
    log(`\nwarm-up: ${params.warmup_s}s per target`);
    for (const t of targets) {
      const w = await measure(loadOpts(t, params.warmup_s));
      if (w.non2xx > 0 || w.errors > 0) note(`warm-up ${t.name}: ${w.non2xx} non-2xx, ${w.errors} errors (${JSON.stringify(w.status_codes)})`);
      await sleep(300);
    }
  }
  log(`\n${params.rounds} rounds × ${targets.length} targets × ${params.duration_s}s`);
  for (let round_ = 1; round_ <= params.rounds; round_++) {
    for (const t of targets) {
      const quiet = await awaitQuiet();
      const r = await measure(loadOpts(t, params.duration_s));
      results.runs.push({ phase: 'main', round: round_, target: t.name, ...r, quiet });
      log(runLine(`r${round_} ${t.name.padEnd(16)}`, r));
      if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) note(`${t.name} round ${round_}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts (${JSON.stringify(r.status_codes)})`);
      await sleep(500);
    }
  }
  summariseMain(results, targets.map((t) => t.name));
  printMain(results);
  results.memory.gateway_main_after_load = { keys: params.keys, ...memory(gateway.proc.pid) };

  // ---- optional: CPU profile of the gateway under the same load ------------------------
  if (params.profile) {
    results.profile = await profileGateway({ dataDir, controlUrl, control, cpuServer, logDir, tmp, version: wanted, auth, loadOpts, results });
  }

  // ---- 6. revocation propagation -----------------------------------------------------
  if (params.revoke_keys > 0) {
    results.revocation = await revocation({ admin, gatewayUrl: gateway.url, count: params.revoke_keys, body });
    const r = results.revocation;
    log(`\nrevocation → first 403 over ${r.count} keys: p50 ${fmt(r.p50_ms, 2)} ms, p99 ${fmt(r.p99_ms, 2)} ms, max ${fmt(r.max_ms, 2)} ms (revoke call itself p50 ${fmt(r.revoke_call_p50_ms, 2)} ms)`);
  }

  // ---- 7. memory and throughput with a large key set ---------------------------------
  if (params.keys_large > params.keys) {
    const extra = params.keys_large - params.keys;
    log(`\nlarge key set: stopping gateway and control, inserting ${extra.toLocaleString('en')} more keys…`);
    await gateway.proc.stop();
    await control.stop();
    const more = seedKeys(path.join(dataDir, 'control.db'), extra, { label: 'large' });
    log(`  ${more.inserted.toLocaleString('en')} keys in ${more.ms} ms (state version ${more.version})`);
    results.seed_large = { keys: more.inserted, ms: more.ms };

    control = startControl({ dataDir, cpu: cpuSide, logDir, name: 'control-large' });
    controlUrl = (await control.start()).urls.control;
    admin = new Admin(controlUrl, dataDir);
    const version = (await admin.call('GET', '/_admin/v1/flags')).version;
    fs.rmSync(path.join(dataDir, `gateway-${GATEWAY_ID}`), { recursive: true, force: true });
    const big = await bootGateway({ name: 'gateway-large', dataDir, controlUrl, control, cpu: cpuServer, logDir, version, results });
    results.memory.gateway_large_ready = { keys: big.keys, ...big.memory };
    log(`gateway with ${big.keys.toLocaleString('en')} live keys ready in ${big.load.spawn_to_ready_ms} ms (snapshot applied ${big.load.listening_to_applied_ms} ms after listening); RSS ${big.memory.rss_mib} MiB, peak ${big.memory.hwm_mib} MiB`);

    // A second, separate stack with 10 keys, same upstream and endpoint.
    const smallDir = path.join(tmp, 'small');
    fs.mkdirSync(smallDir, { mode: 0o700 });
    const small = seedKeys(path.join(smallDir, 'control.db'), 10, { withLoadKey: true, label: 'small' });
    const control10 = startControl({ dataDir: smallDir, cpu: cpuSide, logDir, name: 'control-10' });
    const control10Url = (await control10.start()).urls.control;
    const admin10 = new Admin(control10Url, smallDir);
    const ep10 = await admin10.addEndpoint(ENDPOINT, upstreamBase);
    const gate10 = await admin10.setFlag('beta_gate_enabled', true);
    const gw10 = await bootGateway({ name: 'gateway-10', dataDir: smallDir, controlUrl: control10Url, control: control10, cpu: cpuServer, logDir, version: Math.max(ep10.version, gate10.version), results });
    results.memory.gateway_10_ready = { keys: 10, ...gw10.memory };
    const auth10 = { authorization: `Bearer ${small.loadKey.key}` };

    const bigUrl = `${big.url}/v1/${ENDPOINT}/echo`;
    const smallUrl = `${gw10.url}/v1/${ENDPOINT}/echo`;
    await expectStatus('large gateway', bigUrl, auth, 200);
    await expectStatus('10-key gateway', smallUrl, auth10, 200);
    const pair = [
      { name: `gateway-${big.keys >= 1e6 ? `${big.keys / 1e6}M` : big.keys}-keys`, url: bigUrl, headers: auth, pids: { server: big.proc.pid } },
      { name: 'gateway-10-keys', url: smallUrl, headers: auth10, pids: { server: gw10.proc.pid } },
    ];
    log(`\nlarge vs 10 keys: ${params.compare_rounds} rounds × ${params.compare_duration_s}s`);
    if (params.warmup_s > 0) for (const t of pair) await measure(loadOpts(t, params.warmup_s));
    for (let round_ = 1; round_ <= params.compare_rounds; round_++) {
      for (const t of pair) {
        const quiet = await awaitQuiet();
        const r = await measure(loadOpts(t, params.compare_duration_s));
        results.runs.push({ phase: 'large', round: round_, target: t.name, ...r, quiet });
        log(runLine(`r${round_} ${t.name.padEnd(18)}`, r));
        if (r.non2xx > 0 || r.errors > 0) note(`${t.name} round ${round_}: ${r.non2xx} non-2xx, ${r.errors} errors (${JSON.stringify(r.status_codes)})`);
        await sleep(500);
      }
    }
    results.memory.gateway_large_after_load = { keys: big.keys, ...memory(big.proc.pid) };
    results.memory.gateway_10_after_load = { keys: 10, ...memory(gw10.proc.pid) };
    const med = (name, field) => median(results.runs.filter((r) => r.phase === 'large' && r.target === name).map((r) => r[field]));
    const [a, b] = pair.map((t) => t.name);
    results.large = {
      keys: big.keys,
      medians: Object.fromEntries(pair.map((t) => [t.name, { req_per_s: med(t.name, 'req_per_s'), p50_ms: med(t.name, 'p50_ms'), p99_ms: med(t.name, 'p99_ms'), cpu_us_per_req: med(t.name, 'cpu_us_per_req') }])),
    };
    results.large.ratio_req_per_s = ratio(results.large.medians[a].req_per_s, results.large.medians[b].req_per_s);
    results.large.ratio_cpu_us_per_req = ratio(results.large.medians[a].cpu_us_per_req, results.large.medians[b].cpu_us_per_req);
    results.large.ratio_p99 = ratio(results.large.medians[a].p99_ms, results.large.medians[b].p99_ms);
    log(table(pair.map((t) => {
      const m = results.large.medians[t.name];
      return [t.name, fmt(m.req_per_s, 0), fmt(m.p50_ms, 2), fmt(m.p99_ms, 2), fmt(m.cpu_us_per_req)];
    }), ['target (medians)', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req']));
    log(`${a} / ${b}: req/s ${fmt(results.large.ratio_req_per_s, 3)}, CPU ${fmt(results.large.ratio_cpu_us_per_req, 3)}, p99 ${fmt(results.large.ratio_p99, 3)}`);
  }

  evaluate(results);
}

/** Start a gateway, wait until it enforces `version`, and record how long that took. */
async function bootGateway({ name, dataDir, controlUrl, control, cpu, logDir, version, results, nodeArgs = [], id = GATEWAY_ID }) {
  const proc = startGateway({ dataDir, controlUrl, cpu, logDir, id, name, nodeArgs });
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
  const tick = 1000 / clockTicks();
  const gatewayCpuMs = Math.round(cpuTicks(proc.pid) * tick);
  const controlCpuMs = Math.round((cpuTicks(control.pid) - controlTicks) * tick);
  await sleep(1000); // let the post-load garbage settle before reading RSS
  const mem = memory(proc.pid);
  const load = {
    gateway: name,
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

function summariseMain(results, names) {
  const main = results.runs.filter((r) => r.phase === 'main');
  for (const name of names) {
    const runs = main.filter((r) => r.target === name);
    const pick = (f) => median(runs.map((r) => r[f]));
    results.medians[name] = {
      req_per_s: pick('req_per_s'),
      p50_ms: pick('p50_ms'),
      p99_ms: pick('p99_ms'),
      cpu_us_per_req: pick('cpu_us_per_req'),
      non2xx_total: runs.reduce((s, r) => s + r.non2xx, 0),
      errors_total: runs.reduce((s, r) => s + r.errors, 0),
      upstream_cpu_us_per_req: median(runs.map((r) => r.cpu_us_per_req_by_process.upstream ?? null)),
      control_cpu_us_per_req: median(runs.map((r) => r.cpu_us_per_req_by_process.control ?? null)),
      bench_cpu_us_per_req: pick('bench_cpu_us_per_req'),
      foreign_cpu_pct_max: Math.max(0, ...runs.map((r) => r.machine.foreign_cpu_pct ?? 0)),
    };
    const rps = runs.map((r) => r.req_per_s);
    results.spread[name] = { req_per_s_min: Math.min(...rps), req_per_s_max: Math.max(...rps), rel_spread: round((Math.max(...rps) - Math.min(...rps)) / median(rps), 3) };
  }
  const g = results.medians.gateway;
  for (const base of names.filter((n) => n !== 'gateway')) {
    const b = results.medians[base];
    // The same ratio taken within each round (the two runs seconds apart), then the median:
    // host contention drifts over minutes, so a paired ratio is steadier than a ratio of medians.
    const paired = main
      .filter((r) => r.target === 'gateway')
      .map((r) => ratio(r.cpu_us_per_req, main.find((x) => x.target === base && x.round === r.round)?.cpu_us_per_req ?? null));
    results.ratios[`gateway/${base}`] = {
      req_per_s: ratio(g.req_per_s, b.req_per_s),
      p99_ms: ratio(g.p99_ms, b.p99_ms),
      cpu_us_per_req: ratio(g.cpu_us_per_req, b.cpu_us_per_req),
      cpu_us_per_req_paired: round(median(paired), 3),
    };
  }
}

function printMain(results) {
  log('\nmedians across rounds (server under test pinned to CPU 0; CPU = its utime+stime per request)');
  log(table(Object.entries(results.medians).map(([name, m]) => [name, fmt(m.req_per_s, 0), fmt(m.p50_ms, 2), fmt(m.p99_ms, 2), fmt(m.cpu_us_per_req), m.non2xx_total]), ['target', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'non-2xx']));
  log('');
  log(table(Object.entries(results.ratios).map(([name, r]) => [name, fmt(r.req_per_s, 3), fmt(r.p99_ms, 3), fmt(r.cpu_us_per_req, 3), fmt(r.cpu_us_per_req_paired, 3)]), ['ratio', 'req/s', 'p99', 'CPU µs/req', 'CPU paired']));
  const g = results.medians.gateway;
  if (g) log(`(gateway also costs control ${fmt(g.control_cpu_us_per_req)} µs/req for outcome ingest and the upstream ${fmt(g.upstream_cpu_us_per_req)} µs/req)`);
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
    const res = await pool.request({ path: url, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
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

/** A second gateway on the same control, under `node --cpu-prof`, for one load run. */
async function profileGateway({ dataDir, controlUrl, control, cpuServer, logDir, tmp, version, auth, loadOpts, results }) {
  const dir = path.join(tmp, 'cpuprof');
  fs.mkdirSync(dir, { recursive: true });
  const id = `${GATEWAY_ID}-prof`;
  log(`\nprofiling: gateway under --cpu-prof, one ${params.duration_s}s run`);
  const gw = await bootGateway({ name: 'gateway-prof', dataDir, controlUrl, control, cpu: cpuServer, logDir, version, results, id, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
  const target = { name: 'gateway-profiled', url: `${gw.url}/v1/${ENDPOINT}/echo`, headers: auth, pids: { server: gw.proc.pid } };
  await measure(loadOpts(target, Math.max(1, params.warmup_s)));
  const from = Number(process.hrtime.bigint() / 1000n);
  const r = await measure(loadOpts(target, params.duration_s));
  const to = Number(process.hrtime.bigint() / 1000n);
  results.runs.push({ phase: 'profile', round: 1, target: target.name, ...r });
  await gw.proc.stop();
  const file = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(dir, f))[0];
  if (!file) throw new Error('no .cpuprofile written by the profiled gateway');
  const keepAs = path.join(__dirname, 'results', 'gateway.cpuprofile');
  fs.copyFileSync(file, keepAs);
  const summary = summarise(file, { top: 25, root: path.dirname(distDir()), windowUs: [from, to] });
  log(`  ${fmt(r.req_per_s, 0)} req/s under the profiler; ${summary.samples} samples in the load window, GC ${summary.gc_pct_of_busy}% of busy`);
  for (const row of summary.top.slice(0, 20)) log(`  ${String(row.busy_pct).padStart(5)}%  ${row.function}`);
  log('  by file:');
  for (const row of summary.files.slice(0, 10)) log(`  ${String(row.busy_pct).padStart(5)}%  ${row.file}`);
  log(`  profile saved to ${path.relative(process.cwd(), keepAs)}`);
  return { run: r, file: path.relative(ROOT, keepAs), ...summary };
}

function evaluate(results) {
  const t = [];
  const add = (name, value, limit, met, unit = '') => t.push({ name, value, limit, unit, met: value === null || value === undefined ? false : met });
  const vsBare = results.ratios['gateway/bare-http-proxy'];
  if (vsBare) {
    add('gateway CPU µs/req ≤ 1.1× bare http-proxy', vsBare.cpu_us_per_req, TARGETS.cpu_vs_bare_max, vsBare.cpu_us_per_req <= TARGETS.cpu_vs_bare_max, '×');
    add('gateway req/s ≥ 0.9× bare http-proxy', vsBare.req_per_s, TARGETS.req_per_s_vs_bare_min, vsBare.req_per_s >= TARGETS.req_per_s_vs_bare_min, '×');
    add('gateway p99 ≤ 1.2× bare http-proxy', vsBare.p99_ms, TARGETS.p99_vs_bare_max, vsBare.p99_ms <= TARGETS.p99_vs_bare_max, '×');
  }
  const non2xx = results.runs.reduce((s, r) => s + r.non2xx + r.errors, 0);
  add('no non-2xx answers or errors in any run', non2xx, 0, non2xx === 0);
  if (results.revocation) add('revocation → first 403 p99 < 100 ms', results.revocation.p99_ms, TARGETS.revocation_p99_ms_max, results.revocation.p99_ms < TARGETS.revocation_p99_ms_max, 'ms');
  const big = results.memory.gateway_large_ready;
  if (big) {
    add(`gateway RSS < 400 MiB with ${big.keys} keys (ready)`, results.memory.gateway_large_ready.rss_mib, TARGETS.rss_1m_mib_max, big.rss_mib < TARGETS.rss_1m_mib_max, 'MiB');
    const after = results.memory.gateway_large_after_load;
    if (after) add(`gateway RSS < 400 MiB with ${big.keys} keys (after the comparison runs)`, after.rss_mib, TARGETS.rss_1m_mib_max, after.rss_mib < TARGETS.rss_1m_mib_max, 'MiB');
  }
  if (results.large) add('no req/s loss with the large key set (≥ 0.95× the 10-key gateway)', results.large.ratio_req_per_s, TARGETS.req_per_s_1m_vs_10_min, results.large.ratio_req_per_s >= TARGETS.req_per_s_1m_vs_10_min, '×');
  results.targets = t;
  const noisy = results.runs.filter((r) => (r.machine.foreign_cpu_pct ?? 0) > FOREIGN_WARN_PCT);
  if (noisy.length > 0) {
    const worst = Math.max(...noisy.map((r) => r.machine.foreign_cpu_pct));
    results.notes.push(`${noisy.length} of ${results.runs.length} runs shared the machine with other processes (up to ${worst}% of all CPU time); req/s and latency of those runs are not reliable, CPU µs/req is`);
    log(`\n! ${results.notes.at(-1)}`);
  }
  log('\ntargets');
  for (const x of t) log(`  ${x.met ? 'met   ' : 'MISSED'}  ${x.name}: ${fmt(x.value, x.unit === '×' ? 3 : 1)}${x.unit === '×' ? '×' : x.unit ? ` ${x.unit}` : ''}`);
  log('\nsnapshot loads');
  for (const l of results.snapshot_loads) log(`  ${l.gateway.padEnd(14)} ${String(l.keys).padStart(8)} keys: spawn → enforcing ${l.spawn_to_ready_ms} ms, listening → applied ${l.listening_to_applied_ms ?? '—'} ms, control streamed it in ${l.control_snapshot_send_ms ?? '—'} ms; CPU: gateway ${l.gateway_cpu_ms} ms, control ${l.control_cpu_ms} ms`);
  log('gateway memory');
  for (const [k, m] of Object.entries(results.memory)) log(`  ${k.padEnd(26)} ${String(m.keys).padStart(8)} keys: RSS ${m.rss_mib} MiB, peak ${m.hwm_mib} MiB`);
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
