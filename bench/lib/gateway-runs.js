'use strict';
/**
 * The gateway runs of `npm run bench` (run.js) beyond the interleaved rounds: starting a gateway
 * and timing its snapshot load, the held-pipeline phase, CPU by thread, revocation propagation
 * and the profiled run.
 */
const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { Pool } = require('undici');
const { Proc, memory, cpuTicks, clockTicks } = require('./proc');
const { UNTHROTTLED } = require('./seed');
const { http, startGateway, waitGatewayHealth, waitGatewayVersion, ROOT } = require('./svc');
const { median, percentile, round } = require('./stats');
const { fmt } = require('./rounds');
const { summarise: summariseProfile } = require('./profile');
const { jsonBody } = require('./load');
const { distDir } = require('./app');
const { ENDPOINT, GATEWAY_ID, params, log, sleep } = require('./run-params');

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
      samples.push({ id, ms: round(t1 - t0, 3), polls, revoke_call_ms: round(/** @type {number} */ (revokeDone) - t0, 3) });
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
  return profiledRun({ target, proc: gw.proc, dir, keepAs: `gateway-${engine}`, load, results });
}

/**
 * One more bare proxy (`servers/bare-proxy.js` or `servers/undici-proxy.js`) under
 * `node --cpu-prof`, loaded as the gateways are: the same functions' cost without the gateway.
 */
async function profileBare({ name, script, upstreamBase, cpuServer, logDir, tmp, load, results }) {
  const dir = path.join(tmp, `cpuprof-${name}`);
  fs.mkdirSync(dir, { recursive: true });
  log(`\nprofiling: ${name} under --cpu-prof, one ${params.duration_s}s run`);
  const argv = [process.execPath, '--cpu-prof', `--cpu-prof-dir=${dir}`, path.join(__dirname, '..', 'servers', script), upstreamBase];
  const proc = new Proc(`${name}-prof`, argv, { cpu: cpuServer, log: path.join(logDir, `${name}-prof.log`) });
  const url = (await proc.start()).urls.proxy;
  const target = { name: `${name}-profiled`, url: `${url}/echo`, headers: {}, pids: { server: proc.pid } };
  return profiledRun({ target, proc, dir, keepAs: name, load, results });
}

/** Warm `target` up, load it for one run, stop it and summarise the run's window of its profile. */
async function profiledRun({ target, proc, dir, keepAs: keepName, load, results }) {
  await load(target, Math.max(1, params.warmup_s));
  const from = Number(process.hrtime.bigint() / 1000n);
  const r = await load(target, params.duration_s);
  const to = Number(process.hrtime.bigint() / 1000n);
  results.runs.push({ phase: 'profile', round: 1, target: target.name, ...r });
  await proc.stop();
  const file = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(dir, f))[0];
  if (!file) throw new Error(`no .cpuprofile written by ${target.name}`);
  const keepAs = path.join(__dirname, '..', 'results', `${keepName}.cpuprofile`);
  fs.copyFileSync(file, keepAs);
  const requests = r.requests ?? Math.round(r.req_per_s * params.duration_s);
  const summary = summariseProfile(file, { top: 40, root: path.dirname(distDir()), windowUs: [from, to], requests });
  log(
    `  ${fmt(r.req_per_s, 0)} req/s under the profiler; ${summary.samples} samples in the load window, GC ${summary.gc_pct_of_busy}% of busy; ${summary.busy_us_per_req} µs/req on the main thread`,
  );
  log('  self time, µs per request:');
  for (const row of summary.top.slice(0, 25))
    log(`  ${String(row.us_per_req).padStart(6)}  ${String(row.busy_pct).padStart(5)}%  ${row.function}`);
  log('  by file:');
  for (const row of summary.files.slice(0, 12))
    log(`  ${String(row.us_per_req).padStart(6)}  ${String(row.busy_pct).padStart(5)}%  ${row.file}`);
  log(`  profile saved to ${path.relative(process.cwd(), keepAs)}`);
  return { run: r, file: path.relative(ROOT, keepAs), window_us: [from, to], requests, ...summary };
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

module.exports = { expectStatus, bootGateway, heldPhase, threadSplit, revocation, profileGateway, profileBare };
