'use strict';
/**
 * One closed-loop load run with autocannon's programmatic API, plus the CPU time the server
 * under test spent on it (from /proc/<pid>/stat, sampled just before and just after).
 *
 * autocannon's own latency histogram stores whole milliseconds, too coarse for sub-ms
 * proxies, so every response time (a float in ms from process.hrtime) is also collected here
 * and the percentiles are computed from those.
 */
const autocannon = require('autocannon');
const { cpuFrom, threadTicks, cpuStat, ourTicks } = require('./proc');
const { percentile, round } = require('./stats');

/** A JSON document of exactly `bytes` bytes. */
function jsonBody(bytes = 200) {
  const base = { model: 'bench-1', stream: false, input: '' };
  const empty = Buffer.byteLength(JSON.stringify(base));
  base.input = 'x'.repeat(Math.max(0, bytes - empty));
  const text = JSON.stringify(base);
  if (Buffer.byteLength(text) !== bytes) throw new Error(`body is ${Buffer.byteLength(text)} bytes, wanted ${bytes}`);
  return text;
}

function fire(opts) {
  return new Promise((resolve, reject) => {
    let latencies = new Float64Array(1 << 16);
    let n = 0;
    const instance = autocannon(opts, (err, result) => (err ? reject(err) : resolve({ result, latencies: latencies.subarray(0, n) })));
    instance.on('response', (_client, _status, _bytes, responseTime) => {
      if (n === latencies.length) {
        const grown = new Float64Array(latencies.length * 2);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[n++] = responseTime;
    });
  });
}

/**
 * CPU µs per request of each of the server's threads over a run, summed by thread name (V8's
 * worker threads share one name): `{ main, 'V8 DefaultWorke', … }`.
 */
function threadSplit(before, after, usPerTick, total) {
  const byName = {};
  for (const [tid, t] of after) {
    const ticks = t.ticks - (before.get(tid)?.ticks ?? 0);
    byName[t.name] = (byName[t.name] ?? 0) + ticks;
  }
  const out = {};
  for (const [name, ticks] of Object.entries(byName).sort((a, b) => b[1] - a[1])) {
    if (ticks > 0) out[name] = total > 0 ? round((ticks * usPerTick) / total, 1) : null;
  }
  return out;
}

/**
 * @param {{url: string, headers?: object, body: string, connections: number, duration: number,
 *          pids: Record<string, number>, clkTck: number, timeoutS?: number, threads?: boolean, rate?: number}} run
 *   `pids` names the processes whose CPU time is sampled; `server` is the one under test. With
 *   `threads`, the server's CPU is also split by thread (`cpu_us_per_req_by_thread`). `rate` caps
 *   the requests per second over all connections (autocannon's `overallRate`).
 */
async function measure(run) {
  const cpuSince = cpuFrom(run.pids);
  const threadsBefore = run.threads ? threadTicks(run.pids.server) : null;
  const statBefore = cpuStat();
  const oursBefore = ourTicks();
  const selfBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const { result, latencies } = await fire({
    url: run.url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(run.headers ?? {}) },
    body: run.body,
    connections: run.connections,
    pipelining: 1,
    duration: run.duration,
    timeout: run.timeoutS ?? 10,
    ...(run.rate ? { overallRate: run.rate } : {}),
  });
  const wallS = Number(process.hrtime.bigint() - started) / 1e9;
  const self = process.cpuUsage(selfBefore);
  const cpu = cpuSince();
  const threadsAfter = run.threads ? threadTicks(run.pids.server) : null;
  const ours = ourTicks() - oursBefore;
  const statAfter = cpuStat();

  const sorted = Float64Array.from(latencies).sort();
  const total = result.requests.total;
  const usPerTick = 1e6 / run.clkTck;
  const perReq = (ticks) => (total > 0 ? round((ticks * usPerTick) / total, 1) : null);
  const cpuUs = {};
  for (const [name, ticks] of Object.entries(cpu)) cpuUs[name] = perReq(ticks);
  // Machine-wide view: how busy each CPU was, and how much of it was someone else's work.
  const machine = { cpu_busy_pct: {}, steal_pct: null, foreign_cpu_pct: null };
  for (const name of Object.keys(statAfter)) {
    if (name === 'cpu' || !statBefore[name]) continue;
    const all = statAfter[name].all - statBefore[name].all;
    machine.cpu_busy_pct[name] = all > 0 ? round(((statAfter[name].busy - statBefore[name].busy) / all) * 100, 1) : null;
  }
  const allTicks = statAfter.cpu.all - statBefore.cpu.all;
  if (allTicks > 0) {
    machine.steal_pct = round(((statAfter.cpu.steal - statBefore.cpu.steal) / allTicks) * 100, 1);
    const foreign = statAfter.cpu.busy - statBefore.cpu.busy - ours;
    machine.foreign_cpu_pct = round((Math.max(0, foreign) / allTicks) * 100, 1);
  }
  return {
    req_per_s: round(result.requests.mean, 1),
    req_per_s_overall: round(total / result.duration, 1),
    requests: total,
    p50_ms: round(percentile(sorted, 50), 3),
    p90_ms: round(percentile(sorted, 90), 3),
    p99_ms: round(percentile(sorted, 99), 3),
    max_ms: round(sorted.length ? sorted[sorted.length - 1] : null, 3),
    cpu_us_per_req: cpuUs.server,
    cpu_us_per_req_by_process: cpuUs,
    cpu_ticks: cpu,
    ...(threadsBefore !== null ? { cpu_us_per_req_by_thread: threadSplit(threadsBefore, threadsAfter, usPerTick, total) } : {}),
    bench_cpu_us_per_req: total > 0 ? round((self.user + self.system) / total, 1) : null,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    resets: result.resets,
    status_codes: result.statusCodeStats,
    autocannon_latency_ms: { p50: result.latency.p50, p99: result.latency.p99, mean: result.latency.average },
    machine,
    duration_s: round(result.duration, 2),
    wall_s: round(wallS, 2),
  };
}

module.exports = { measure, jsonBody };
