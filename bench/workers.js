#!/usr/bin/env node
'use strict';
/**
 * `npm run bench:workers`: one gateway as a single process against one of two workers
 * (`--workers 2`), and how connections spread over the workers with the cluster's two
 * scheduling policies.
 *
 * Three gateways on one control, gate off, one endpoint on the bench upstream:
 * - `single`: `--workers 1` (one process, as before workers existed);
 * - `workers-rr`: `--workers 2`, connections handed out by the supervisor in turn (`SCHED_RR`);
 * - `workers-none`: `--workers 2` under `NODE_CLUSTER_SCHED_POLICY=none` (the kernel picks the
 *   worker that accepts);
 * - `bare-single` and `bare-cluster`: the bare http-proxy server as one process and as two under
 *   node:cluster round-robin: what two Node processes cost against one with no svc in them, so
 *   the summary can give svc's ratio over that one (`workers_rr_ratio_over_bare_ratio`);
 * - `pipeline-single` and `pipeline-cluster`: svc's request pipeline on the http-proxy engine
 *   without control (`servers/pipeline-server.js`: the real handler, journal and metrics, a fixed
 *   state, records acked from memory) as one process and as two: what svc's per-request work costs
 *   in two processes, apart from control, the shipper and the supervisor.
 * After BENCH_WARMUP_S seconds (default 15) of load on each, interleaved rounds (BENCH_ROUNDS,
 * default 3) of BENCH_DURATION_S seconds (default 10) each,
 * BENCH_CONNECTIONS connections (default 50, keep-alive, a 200-byte JSON POST), unpinned: the
 * load generator, upstream and control share the machine's CPUs with the gateway.
 *
 * The load generator (BENCH_LOADGEN): `wrk` when it is installed (`apt-get install wrk`), else
 * `autocannon` (see lib/wrk.js for why wrk is preferred). Below saturation: with wrk,
 * BENCH_THINK_MS (default 0) is each connection's wait after each answer, a steady load; with
 * autocannon, BENCH_RATE caps the requests per second, which autocannon sends as a burst at the
 * start of each second.
 *
 * Per run: req/s, the gateway's CPU time per request summed over every process of it (the
 * supervisor and both workers, `/proc/<pid>/stat` utime + stime, as `npm run bench` measures a
 * single gateway), and per worker the connections it accepted and the calls it answered during
 * the run (from the gateway's `/health`, whose `workers` list has both counts). Figures are
 * medians over the rounds; `bench/results/workers.json` keeps every run. BENCH_ONLY (e.g.
 * `single,workers-rr`) runs only the variants named.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { envInt } = require('./lib/env');
const { measure, jsonBody } = require('./lib/load');
const { distDir } = require('./lib/app');
const { internal } = require('./lib/internals');
const { hasWrk, measureWrk } = require('./lib/wrk');
const { Proc, clockTicks, stopAll, killAllSync } = require('./lib/proc');
const { median, round, ratio } = require('./lib/stats');
const { Admin, http, startControl, startGateway, waitGatewayVersion } = require('./lib/svc');

const ROUNDS = envInt('BENCH_ROUNDS', 3, 1);
const DURATION_S = envInt('BENCH_DURATION_S', 10, 1);
const CONNECTIONS = envInt('BENCH_CONNECTIONS', 50, 1);
/** autocannon: requests per second over all connections (0: as fast as the gateway answers). */
const RATE = envInt('BENCH_RATE', 0);
/** wrk: milliseconds each connection waits after an answer before its next request (0: none). */
const THINK_MS = envInt('BENCH_THINK_MS', 0);
const LOADGEN = process.env.BENCH_LOADGEN || (hasWrk() ? 'wrk' : 'autocannon');
if (LOADGEN !== 'wrk' && LOADGEN !== 'autocannon') throw new Error(`BENCH_LOADGEN: wrk or autocannon, not ${LOADGEN}`);
if (LOADGEN === 'wrk' && RATE > 0) throw new Error("BENCH_RATE is autocannon's; with wrk, BENCH_THINK_MS sets a load below saturation");
if (LOADGEN === 'autocannon' && THINK_MS > 0) throw new Error('BENCH_THINK_MS needs wrk (BENCH_LOADGEN=wrk)');
/** Seconds of load per gateway before the first round: each worker compiles its hot code on its own, at half the rate. */
const WARMUP_S = envInt('BENCH_WARMUP_S', 15, 1);
const OPEN_LIMITS = {
  SVC_LIMITS_IP_COUNT: '1000000000',
  SVC_LIMITS_IP_BURST: '1000000000',
  SVC_LIMITS_KEY_COUNT: '1000000000',
  SVC_LIMITS_KEY_BURST: '1000000000',
};
const VARIANTS = [
  { name: 'single', workers: 1, env: {} },
  { name: 'workers-rr', workers: 2, env: { NODE_CLUSTER_SCHED_POLICY: 'rr' } },
  { name: 'workers-none', workers: 2, env: { NODE_CLUSTER_SCHED_POLICY: 'none' } },
  // Node's own cost of two processes against one, with no svc in them: a bare http-proxy server.
  { name: 'bare-single', workers: 1, bare: true, env: {} },
  { name: 'bare-cluster', workers: 2, bare: true, env: { NODE_CLUSTER_SCHED_POLICY: 'rr' } },
  // svc's request pipeline without control, the shipper or the supervisor.
  { name: 'pipeline-single', workers: 1, pipeline: true, env: {} },
  { name: 'pipeline-cluster', workers: 2, pipeline: true, env: { NODE_CLUSTER_SCHED_POLICY: 'rr' } },
];

/** BENCH_ONLY: a comma-separated list of the variants to run (default all). */
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').filter(Boolean);
const log = (line) => process.stderr.write(`[bench:workers] ${line}\n`);

/** The gateway's detailed /health. */
async function health(url, token) {
  return (await http('GET', `${url}/health`, { headers: { authorization: `Bearer ${token}` } })).body;
}

/** Per worker: connections accepted and calls answered so far (a single gateway: none). */
async function counts(url, token) {
  if (token === null) return [];
  const h = await health(url, token);
  return (h.workers ?? []).map((w) => ({ id: w.id, pid: w.pid, connections: w.connections, calls: w.answered_calls }));
}

/** Medians per gateway over the rounds, and two workers' CPU per request over one process's. */
function summarize(gateways, runs) {
  const summary = {};
  for (const g of gateways) {
    const mine = runs.filter((r) => r.gateway === g.name);
    const busiest = (r, field) => Math.max(...r.spread.map((s) => s[field])) / r.spread.reduce((a, s) => a + s[field], 0);
    const share = (r) => busiest(r, 'calls');
    const connShare = (r) => busiest(r, 'connections');
    summary[g.name] = {
      req_per_s: median(mine.map((r) => r.req_per_s)),
      cpu_us_per_req: median(mine.map((r) => r.cpu_us_per_req)),
      busiest_worker_share_of_calls: g.workers > 1 ? round(median(mine.map(share)), 3) : null,
      busiest_worker_share_by_run: g.workers > 1 ? mine.map((r) => round(share(r), 3)) : null,
      busiest_worker_share_of_connections: g.workers > 1 ? round(median(mine.map(connShare)), 3) : null,
      connections_by_run: g.workers > 1 ? mine.map((r) => r.spread.map((s) => s.connections).join('/')) : null,
    };
  }
  const over = (name, base = 'single') =>
    summary[name] && summary[base] ? round(ratio(summary[name].cpu_us_per_req, summary[base].cpu_us_per_req), 3) : null;
  summary.cpu_per_req_workers_rr_over_single = over('workers-rr');
  summary.cpu_per_req_workers_none_over_single = over('workers-none');
  summary.cpu_per_req_bare_cluster_over_bare_single = over('bare-cluster', 'bare-single');
  summary.cpu_per_req_pipeline_cluster_over_pipeline_single = over('pipeline-cluster', 'pipeline-single');
  // What svc's workers add beyond what two Node processes cost against one: the ratio of the ratios,
  // and its median over the rounds (each round's four runs paired).
  const rr = summary.cpu_per_req_workers_rr_over_single;
  const bare = summary.cpu_per_req_bare_cluster_over_bare_single;
  summary.workers_rr_ratio_over_bare_ratio = rr !== null && bare !== null ? round(rr / bare, 3) : null;
  const rounds = [...new Set(runs.map((r) => r.round))];
  const cpuOf = (round_, name) => runs.find((r) => r.round === round_ && r.gateway === name)?.cpu_us_per_req ?? null;
  const paired = rounds
    .map((k) => [cpuOf(k, 'workers-rr'), cpuOf(k, 'single'), cpuOf(k, 'bare-cluster'), cpuOf(k, 'bare-single')])
    .filter((c) => c.every((x) => x !== null))
    .map(([w, s1, bc, bs]) => w / s1 / (bc / bs));
  summary.workers_rr_ratio_over_bare_ratio_paired = paired.length ? round(median(paired), 3) : null;
  summary.workers_rr_ratio_over_bare_ratio_by_round = paired.map((x) => round(x, 3));
  return summary;
}

/**
 * A variant that is not an svc gateway: the bare proxy, or svc's request pipeline without control
 * (its gate on: it admits `key`), as one process or as `v.workers` under node:cluster.
 */
async function startServer(v, upstreamUrl, logDir, key) {
  const server = v.bare
    ? [path.join(__dirname, 'servers', 'bare-proxy.js'), `${upstreamUrl}/api`]
    : [path.join(__dirname, 'servers', 'pipeline-server.js'), distDir(), 'http-proxy', `${upstreamUrl}/api`, 'gateway', key];
  const proc = new Proc(v.name, [process.execPath, ...server], {
    log: path.join(logDir, `${v.name}.log`),
    env: { ...v.env, BENCH_PROXY_WORKERS: String(v.workers) },
  });
  const info = await proc.start();
  const pids = { supervisor: proc.pid, ...Object.fromEntries((info.workers ?? []).map((pid, i) => [`worker-${i + 1}`, pid])) };
  const target = v.bare ? `${info.urls.proxy}/x` : `${info.urls.proxy}/v1/bench/x`;
  const headers = v.bare ? {} : { authorization: `Bearer ${key}` };
  log(`${v.name}: ${info.urls.proxy} pids ${JSON.stringify(pids)}`);
  return { ...v, proc, url: info.urls.proxy, target, headers, pids, token: null };
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-workers-'));
  const logDir = path.join(tmp, 'logs');
  fs.mkdirSync(logDir);
  const dataDir = path.join(tmp, 'data');
  const upstream = new Proc('upstream', [process.execPath, path.join(__dirname, 'servers', 'upstream.js')], {
    log: path.join(logDir, 'upstream.log'),
  });
  const upstreamUrl = (await upstream.start()).urls.upstream;
  const control = startControl({ dataDir, cpu: null, logDir, env: OPEN_LIMITS });
  const controlUrl = (await control.start()).urls.control;
  const admin = new Admin(controlUrl, dataDir);
  const { version } = await admin.addEndpoint('ep', `${upstreamUrl}/api`);
  const token = fs.readFileSync(path.join(dataDir, 'metrics.token'), 'utf8').trim();

  const gateways = [];
  // The pipeline server admits this key only (its gate is on).
  const key = internal('protocol/keys').generateKey();
  for (const v of VARIANTS.filter((x) => ONLY.length === 0 || ONLY.includes(x.name))) {
    if (v.bare || v.pipeline) {
      gateways.push(await startServer(v, upstreamUrl, logDir, key));
      continue;
    }
    const proc = startGateway({
      cpu: null,
      dataDir,
      controlUrl,
      logDir,
      id: `gw-${v.name}`,
      name: v.name,
      env: { ...v.env, SVC_GATEWAY_WORKERS: String(v.workers) },
    });
    const url = (await proc.start()).urls.gateway;
    await waitGatewayVersion(url, version, dataDir);
    const pids = { supervisor: proc.pid, ...Object.fromEntries((await counts(url, token)).map((w) => [w.id, w.pid])) };
    gateways.push({ ...v, proc, url, target: `${url}/v1/ep/x`, headers: {}, pids, token });
    log(`${v.name}: ${url} pids ${JSON.stringify(pids)}`);
  }

  const body = jsonBody(200);
  const clkTck = clockTicks();
  const runs = [];
  /** One run of the load generator against a gateway. */
  const load = (g, duration) => {
    const run = { url: g.target, headers: g.headers, body, connections: CONNECTIONS, duration, pids: g.pids, clkTck };
    return LOADGEN === 'wrk' ? measureWrk({ ...run, thinkMs: THINK_MS }) : measure({ ...run, rate: RATE });
  };
  log(`load generator: ${LOADGEN}${THINK_MS > 0 ? `, ${THINK_MS} ms think time` : ''}${RATE > 0 ? `, capped at ${RATE} req/s` : ''}`);
  for (const g of gateways) await load(g, WARMUP_S); // warm-up
  for (let round_ = 1; round_ <= ROUNDS; round_++) {
    for (const g of gateways) {
      const before = await counts(g.url, g.token);
      const m = await load(g, DURATION_S);
      const after = await counts(g.url, g.token);
      const total = Object.values(m.cpu_ticks).reduce((a, b) => a + b, 0);
      const cpuUs = m.requests > 0 ? round((total * 1e6) / clkTck / m.requests, 1) : null;
      const spread = after.map((w, i) => ({
        id: w.id,
        connections: w.connections - before[i].connections,
        calls: w.calls - before[i].calls,
      }));
      runs.push({
        round: round_,
        gateway: g.name,
        req_per_s: m.req_per_s,
        p50_ms: m.p50_ms,
        p99_ms: m.p99_ms,
        requests: m.requests,
        cpu_us_per_req: cpuUs,
        by_process: m.cpu_us_per_req_by_process,
        non2xx: m.non2xx,
        errors: m.errors,
        spread,
      });
      log(
        `round ${round_} ${g.name}: ${m.req_per_s} req/s, ${cpuUs} µs CPU/req${m.non2xx + m.errors > 0 ? ` (${m.non2xx} not 2xx, ${m.errors} errors)` : ''}${spread.length ? `, spread ${spread.map((s) => `${s.id} ${s.connections} conn ${s.calls} calls`).join(' / ')}` : ''}`,
      );
    }
  }

  const summary = summarize(gateways, runs);
  const out = {
    at: new Date().toISOString(),
    cpus: os.availableParallelism(),
    rounds: ROUNDS,
    duration_s: DURATION_S,
    connections: CONNECTIONS,
    load_generator: LOADGEN,
    think_ms: THINK_MS,
    rate: RATE,
    summary,
    runs,
  };
  fs.mkdirSync(path.join(__dirname, 'results'), { recursive: true });
  fs.writeFileSync(path.join(__dirname, 'results', 'workers.json'), JSON.stringify(out, null, 2) + '\n');
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
}

process.on('exit', killAllSync);
main()
  .catch((err) => {
    process.stderr.write(`${err.stack ?? err}\n`);
    process.exitCode = 1;
  })
  .finally(() => stopAll());
