'use strict';
/**
 * One load run with wrk (Debian's `wrk` package) instead of autocannon, plus the CPU time the
 * processes under test spent during it.
 *
 * Why a second load generator: on a 2-core machine the load generator shares the CPUs with what
 * it measures. autocannon is a Node process and takes about as much CPU per request as the
 * upstream; wrk, in C, takes a fraction of it, so a gateway's CPU per request is measured with
 * less of the generator's contention in it. And autocannon's rate cap (`overallRate`) is a quota
 * per connection per second, sent as fast as answered at the start of each second: a capped run is
 * a saturated burst and then silence. wrk's `delay()` hook gives a steady load below saturation
 * instead: each connection waits `thinkMs` after each answer before its next request.
 */
const { execFile, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { cpuFrom } = require('./proc');
const { round } = require('./stats');

/** Whether `wrk` is on the PATH. */
function hasWrk() {
  return spawnSync('wrk', ['-v'], { stdio: 'ignore' }).error === undefined;
}

/** A Lua string literal in long brackets (the body and headers are ASCII JSON and tokens). */
const lua = (text) => {
  if (text.includes(']==]')) throw new Error('wrk script: text holds "]==]"');
  return `[==[${text}]==]`;
};

/** wrk's script: the request, and the think time after each answer when there is one. */
function script({ headers, body, thinkMs }) {
  const lines = ['wrk.method = "POST"', `wrk.body = ${lua(body)}`, 'wrk.headers["content-type"] = "application/json"'];
  for (const [name, value] of Object.entries(headers)) lines.push(`wrk.headers[ ${lua(name)} ] = ${lua(value)}`);
  if (thinkMs > 0) lines.push(`function delay() return ${thinkMs} end`);
  return lines.join('\n') + '\n';
}

/** A latency as wrk prints it (`850.00us`, `2.31ms`, `1.02s`), in milliseconds. */
function ms(text) {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (m === null) throw new Error(`wrk: unreadable latency ${text}`);
  return round(Number(m[1]) * { us: 1e-3, ms: 1, s: 1e3, m: 60e3 }[m[2]], 3);
}

/** The figures of wrk's report (`--latency`). */
function parse(out) {
  const total = /(\d+) requests in ([\d.]+)(\w+),/.exec(out);
  if (total === null) throw new Error(`wrk: no request count in its report:\n${out}`);
  const pct = (p) => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)$`, 'm').exec(out);
    return m === null ? null : ms(m[1]);
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requests: Number(total[1]),
    p50_ms: pct(50),
    p90_ms: pct(90),
    p99_ms: pct(99),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    errors: sock === null ? 0 : Number(sock[1]) + Number(sock[2]) + Number(sock[3]),
    timeouts: sock === null ? 0 : Number(sock[4]),
  };
}

/**
 * @param {{url: string, headers?: Record<string, string>, body: string, connections: number,
 *          duration: number, pids: Record<string, number>, clkTck: number, thinkMs?: number}} run
 *   One wrk thread, `connections` keep-alive connections for `duration` seconds; `pids` names the
 *   processes whose CPU time is sampled.
 */
async function measureWrk(run) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-wrk-'));
  const file = path.join(dir, 'post.lua');
  fs.writeFileSync(file, script({ headers: run.headers ?? {}, body: run.body, thinkMs: run.thinkMs ?? 0 }));
  const cpuSince = cpuFrom(run.pids);
  const started = process.hrtime.bigint();
  const args = ['-t1', `-c${run.connections}`, `-d${run.duration}s`, '--timeout', '10s', '--latency', '-s', file, run.url];
  let out;
  try {
    out = await new Promise((resolve, reject) =>
      execFile('wrk', args, { encoding: 'utf8' }, (err, stdout, stderr) =>
        err ? reject(new Error(`wrk: ${err.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const wallS = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = cpuSince();
  const report = parse(out);
  const perReq = (ticks) => (report.requests > 0 ? round((ticks * 1e6) / run.clkTck / report.requests, 1) : null);
  const cpuUs = {};
  for (const [name, ticks] of Object.entries(cpu)) cpuUs[name] = perReq(ticks);
  return {
    ...report,
    req_per_s: round(report.requests / run.duration, 1),
    cpu_us_per_req: cpuUs.server ?? null,
    cpu_us_per_req_by_process: cpuUs,
    cpu_ticks: cpu,
    wall_s: round(wallS, 2),
  };
}

module.exports = { hasWrk, measureWrk, parse, script };
