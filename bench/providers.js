#!/usr/bin/env node
'use strict';
/**
 * `npm run bench:providers`: the cached `GET {api_url}/api/v1/providers` path of a real
 * `svcctl serve control` (per-IP limit, User-Agent filter, router, node-cache, ETag) against
 * a bare Node `http` server answering the same JSON bytes. Rounds are interleaved (svc, bare,
 * bare, svc, …) so drift hits both alike; the ratio of the median req/s is the result
 * (target: svc ≥ 0.8 × bare). The CPU time each server spends per request (from /proc) is
 * printed too: it is what the ratio measures, minus the noise of a busy machine.
 *
 * The providers page (`GET {api_url}/providers`, HTML from the same cache with a fresh CSP
 * nonce per answer, asked for as a browser asks: `Accept-Encoding: gzip, deflate, br`, so it is
 * the gzip answer) runs in the same rounds against the same control: its median req/s over the
 * JSON read's is the page ratio (target: ≥ 0.8).
 *
 * With taskset and ≥ 2 CPUs, both servers run on CPU 0 (only one is loaded at a time) and
 * the load generator on CPU 1. The load generator is wrk when it is installed (`apt-get
 * install wrk`; one thread), else autocannon in this process. A ratio means something only
 * while the server, not the load generator, sets the rate: each run prints the load
 * generator's CPU, and a run where it is saturated (≥ 95 % of its CPU) is flagged. autocannon
 * saturates on the gzip page at about half the rate the server can serve it (it spends more
 * per answer on a binary body than on JSON), so its page ratio says little; use wrk.
 *
 * Settings (env): BENCH_DURATION (s per run, default 5), BENCH_ROUNDS (default 5),
 * BENCH_CONNECTIONS (default 50), BENCH_WARMUP (s, default 2), BENCH_ENDPOINTS (default 20),
 * BENCH_LOADGEN (`wrk` or `autocannon`; default wrk when on PATH).
 * Writes bench/results/providers.json.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const readline = require('node:readline');
const { execFile, execFileSync, spawn, spawnSync } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const autocannon = require('autocannon');
const { envInt } = require('./lib/env');
const { controlArgs } = require('./lib/svc');

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'dist', 'cli', 'index.js');
const RESULTS = path.join(__dirname, 'results', 'providers.json');
const UA = 'svc-monitor-sdk/0.1.0';
const TARGET_RATIO = 0.8;

const params = {
  duration_s: envInt('BENCH_DURATION', 5, 1),
  rounds: envInt('BENCH_ROUNDS', 5, 1),
  connections: envInt('BENCH_CONNECTIONS', 50, 1),
  warmup_s: envInt('BENCH_WARMUP', 2, 0),
  endpoints: envInt('BENCH_ENDPOINTS', 20, 1),
  loadgen: loadGenerator(process.env.BENCH_LOADGEN),
};

/** `wrk` when asked for or (unasked) installed, else `autocannon`. */
function loadGenerator(asked) {
  if (asked !== undefined && asked !== '' && asked !== 'wrk' && asked !== 'autocannon')
    throw new Error(`BENCH_LOADGEN must be wrk or autocannon, got ${JSON.stringify(asked)}`);
  if (asked === 'autocannon') return 'autocannon';
  const found = spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
  if (asked === 'wrk' && !found) throw new Error('BENCH_LOADGEN=wrk but wrk is not installed (apt-get install wrk)');
  return found ? 'wrk' : 'autocannon';
}

// ---------------------------------------------------------------------------------------
// The bare server: this same file, run as `node bench/providers.js --bare FILE`.

function serveBare() {
  const body = fs.readFileSync(process.argv[3]);
  const headers = JSON.parse(fs.readFileSync(process.argv[4], 'utf8'));
  const server = http.createServer((req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  });
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(
      `bare-ready ${JSON.stringify({ url: `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}` })}\n`,
    );
  });
  process.stdin.on('end', () => process.exit(0)).resume();
}

// ---------------------------------------------------------------------------------------
// Processes

const pinning = (() => {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return os.availableParallelism() >= 2;
  } catch {
    return false;
  }
})();

const children = [];

/** Spawn `argv` (pinned to CPU 0 when pinning) and resolve with the JSON after `prefix`. */
function start(name, argv, prefix, env = {}) {
  const cmd = pinning ? ['taskset', '-c', '0', ...argv] : argv;
  const child = spawn(cmd[0], cmd.slice(1), { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    const limit = setTimeout(() => reject(new Error(`${name} not ready within 30 s; stderr: ${stderr}`)), 30_000);
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      if (!line.startsWith(prefix)) return;
      clearTimeout(limit);
      resolve({ child, info: JSON.parse(line.slice(prefix.length)) });
    });
    child.on('exit', (code) => {
      clearTimeout(limit);
      reject(new Error(`${name} exited (${code}) before ready; stderr: ${stderr}`));
    });
  });
}

function stopAll() {
  for (const child of children) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    child.stdin.end();
    child.kill('SIGTERM');
  }
}

/**
 * @param {string} method
 * @param {string} url
 * @param {{ token?: string, body?: unknown }} [options]
 */
async function call(method, url, { token, body } = {}) {
  const res = await fetch(url, {
    method,
    headers: {
      'user-agent': UA,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url} → ${res.status}: ${text}`);
  return { res, text };
}

// ---------------------------------------------------------------------------------------
// Load

/** What a browser sends that changes the answer: the page is gzipped for it (the JSON read is not). */
const BROWSER_HEADERS = { 'accept-encoding': 'gzip, deflate, br' };

/** A load generator's saturation: its CPU share over the run at or above this is flagged. */
const LOADGEN_SATURATED = 0.95;

/** One run against `url`: req/s, p50/p99 (ms), failures and the load generator's CPU share. */
async function load(url, extra = {}, duration = params.duration_s) {
  const headers = { 'user-agent': UA, ...extra };
  if (params.loadgen === 'wrk') return wrk(url, headers, duration);
  const cpu0 = process.cpuUsage();
  const result = await new Promise((resolve, reject) => {
    autocannon({ url, connections: params.connections, duration, pipelining: 1, headers }, (err, r) => (err ? reject(err) : resolve(r)));
  });
  const cpu = process.cpuUsage(cpu0);
  return {
    total: result.requests.total,
    req_per_s: result.requests.average,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    failed: result.non2xx + result.errors + result.timeouts,
    loadgen_cpu: (cpu.user + cpu.system) / 1e6 / duration,
  };
}

/** Children's CPU (cutime + cstime) of this process, in clock ticks: wrk's, once it is reaped. */
function childTicks() {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(rest[13]) + Number(rest[14]);
}

/** wrk's latency figures ("505.00us", "2.10ms", "1.02s") in ms. */
function wrkMs(text) {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (m === null) throw new Error(`wrk: unreadable latency ${JSON.stringify(text)}`);
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000 }[m[2]];
}

function wrk(url, headers, duration) {
  const args = [
    '-t',
    '1',
    '-c',
    String(params.connections),
    '-d',
    `${duration}s`,
    '--latency',
    ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]),
    url,
  ];
  const ticks0 = childTicks();
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { encoding: 'utf8' }, (err, out) => {
      if (err) return reject(new Error(`wrk failed: ${err.message}`));
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const num = (re) => {
        const m = re.exec(out);
        return m === null ? 0 : Number(m[1]);
      };
      const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      resolve({
        total: num(/(\d+) requests in/),
        req_per_s: num(/Requests\/sec:\s+([\d.]+)/),
        p50_ms: wrkMs(/^\s+50%\s+(\S+)/m.exec(out)[1]),
        p99_ms: wrkMs(/^\s+99%\s+(\S+)/m.exec(out)[1]),
        failed:
          num(/Non-2xx or 3xx responses: (\d+)/) + (socketErrors === null ? 0 : socketErrors.slice(1).reduce((a, b) => a + Number(b), 0)),
        loadgen_cpu: (childTicks() - ticks0) / CLK_TCK / seconds,
      });
    });
  });
}

/** utime + stime of a process (all threads), in clock ticks; null off Linux. */
function cpuTicks(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  } catch {
    return null;
  }
}
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};
const round = (x, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

/** Providers with data: each endpoint gets a few hundred outcomes over the last hour. */
async function seedOutcomes(control, admin, sync) {
  const now = Date.now();
  const records = [];
  for (let e = 0; e < params.endpoints; e++) {
    const id = `bench-${String(e).padStart(3, '0')}`;
    await call('POST', `${control.urls.control}/_admin/v1/endpoints`, { token: admin, body: { id, upstream: `https://${id}.example/v1` } });
    for (let i = 0; i < 300; i++) {
      records.push({
        call_id: randomUUID(),
        key_id: null,
        endpoint_id: id,
        method: 'POST',
        status: 200,
        outcome: i % (e + 7) === 0 ? 'server_error' : 'ok',
        latency_ms: 20 + ((i * 37) % 400),
        started_at: new Date(now - i * 10_000).toISOString(),
        gateway_id: 'bench',
      });
    }
  }
  for (let i = 0; i < records.length; i += 5000) {
    await call('POST', `${control.urls.control}/_sync/v1/outcomes`, {
      token: sync,
      body: { gateway_id: 'bench', records: records.slice(i, i + 5000) },
    });
  }
}

/** The interleaved rounds: each of svc, bare and page loaded in turn (order reversed every other round). */
async function measureRounds(urls, pids) {
  const runs = { svc: [], bare: [], page: [] };
  for (let r = 0; r < params.rounds; r++) {
    const order = r % 2 === 0 ? ['svc', 'bare', 'page'] : ['page', 'bare', 'svc'];
    for (const which of order) {
      const pid = which === 'bare' ? pids.bare : pids.control;
      const before = cpuTicks(pid);
      const result = await load(urls[which], which === 'page' ? BROWSER_HEADERS : {});
      const after = cpuTicks(pid);
      const cpuUs = before === null || after === null ? null : round(((after - before) * 1e6) / CLK_TCK / result.total, 1);
      if (result.failed > 0) throw new Error(`${which}: ${result.failed} failed requests`);
      const saturated = result.loadgen_cpu >= LOADGEN_SATURATED;
      runs[which].push({
        req_per_s: round(result.req_per_s),
        p50_ms: round(result.p50_ms, 2),
        p99_ms: round(result.p99_ms, 2),
        cpu_us_per_req: cpuUs,
        loadgen_cpu: round(result.loadgen_cpu, 2),
      });
      console.log(
        `  round ${r + 1} ${which.padEnd(4)} ${String(round(result.req_per_s)).padStart(9)} req/s  p50 ${round(result.p50_ms, 2)} ms  p99 ${round(result.p99_ms, 2)} ms  ${cpuUs ?? '-'} µs CPU/req  load generator ${Math.round(result.loadgen_cpu * 100)} % CPU${saturated ? ' (saturated: it set this rate, not the server)' : ''}`,
      );
    }
  }
  return runs;
}

/** Medians, ratios against the targets, and `results/providers.json`. */
function report(runs) {
  const summary = (xs) => ({
    req_per_s: round(median(xs.map((x) => x.req_per_s))),
    p50_ms: median(xs.map((x) => x.p50_ms)),
    p99_ms: median(xs.map((x) => x.p99_ms)),
    cpu_us_per_req: xs.some((x) => x.cpu_us_per_req === null) ? null : median(xs.map((x) => x.cpu_us_per_req)),
    loadgen_cpu: median(xs.map((x) => x.loadgen_cpu)),
  });
  const svc = summary(runs.svc);
  const bareSummary = summary(runs.bare);
  // Compared unrounded: a ratio that only rounds up to the target does not meet it.
  const rawRatio = svc.req_per_s / bareSummary.req_per_s;
  const ratio = round(rawRatio, 3);
  const cpuRatio = svc.cpu_us_per_req && bareSummary.cpu_us_per_req ? round(bareSummary.cpu_us_per_req / svc.cpu_us_per_req, 3) : null;
  const pageSummary = summary(runs.page);
  const rawPageRatio = pageSummary.req_per_s / svc.req_per_s;
  const pageRatio = round(rawPageRatio, 3);
  const pass = rawRatio >= TARGET_RATIO && rawPageRatio >= TARGET_RATIO;
  console.log(`median svc  ${svc.req_per_s} req/s (p50 ${svc.p50_ms} ms, p99 ${svc.p99_ms} ms, ${svc.cpu_us_per_req ?? '-'} µs CPU/req)`);
  console.log(
    `median bare ${bareSummary.req_per_s} req/s (p50 ${bareSummary.p50_ms} ms, p99 ${bareSummary.p99_ms} ms, ${bareSummary.cpu_us_per_req ?? '-'} µs CPU/req)`,
  );
  if (cpuRatio !== null) console.log(`CPU cost ratio bare/svc ${cpuRatio} (the req/s a CPU-bound svc would reach, relative to bare)`);
  console.log(
    `median page ${pageSummary.req_per_s} req/s (p50 ${pageSummary.p50_ms} ms, p99 ${pageSummary.p99_ms} ms, ${pageSummary.cpu_us_per_req ?? '-'} µs CPU/req)`,
  );
  console.log(`ratio svc/bare ${ratio} (target ≥ ${TARGET_RATIO}: ${rawRatio >= TARGET_RATIO ? 'met' : 'NOT met'})`);
  const saturated = Object.entries({ svc, bare: bareSummary, page: pageSummary })
    .filter(([, x]) => x.loadgen_cpu >= LOADGEN_SATURATED)
    .map(([k]) => k);
  if (saturated.length > 0)
    console.log(
      `the load generator (${params.loadgen}) was saturated on ${saturated.join(', ')}: those rates are its, not the server's${params.loadgen === 'autocannon' ? ' (install wrk)' : ''}`,
    );
  console.log(
    `ratio page/json ${pageRatio} (the /providers page against /api/v1/providers; target ≥ ${TARGET_RATIO}: ${rawPageRatio >= TARGET_RATIO ? 'met' : 'NOT met'})`,
  );

  fs.mkdirSync(path.dirname(RESULTS), { recursive: true });
  fs.writeFileSync(
    RESULTS,
    JSON.stringify(
      {
        at: new Date().toISOString(),
        node: process.version,
        pinned: pinning,
        params,
        loadgen_saturated: saturated,
        svc,
        bare: bareSummary,
        page: pageSummary,
        ratio,
        page_ratio: pageRatio,
        cpu_ratio: cpuRatio,
        target: TARGET_RATIO,
        pass,
        runs,
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`results in ${path.relative(ROOT, RESULTS)}`);
  return pass ? 0 : 1;
}

async function main() {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  if (pinning) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-providers-'));
  process.on('exit', () => {
    stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

  const dataDir = path.join(dir, 'data');
  const { child: controlProc, info: control } = await start('control', [process.execPath, CLI, ...controlArgs(dataDir)], 'svc-ready ', {
    SVC_SUPERVISED: '1',
    SVC_LIMITS_PUBLIC_COUNT: '1000000000',
    SVC_CACHE_PROVIDERS_TTL_S: '3600',
    SVC_LOG_LEVEL: 'warn',
  });
  const admin = fs.readFileSync(path.join(dataDir, 'admin.token'), 'utf8').trim();
  const sync = fs.readFileSync(path.join(dataDir, 'sync.token'), 'utf8').trim();

  await seedOutcomes(control, admin, sync);

  const svcUrl = `${control.urls.api}/api/v1/providers`;
  const pageUrl = `${control.urls.api}/providers`;
  const page = await call('GET', pageUrl);
  if (!page.res.headers.get('content-security-policy')?.includes("'nonce-")) throw new Error('the providers page has no nonce CSP');
  const pageGzip = await fetch(pageUrl, { headers: { 'user-agent': UA, ...BROWSER_HEADERS } });
  if (pageGzip.headers.get('content-encoding') !== 'gzip') throw new Error('the providers page is not gzipped for a browser');
  const pageWire = Number(pageGzip.headers.get('content-length'));
  await pageGzip.arrayBuffer();
  const { res, text } = await call('GET', svcUrl);
  const bodyFile = path.join(dir, 'providers.json');
  fs.writeFileSync(bodyFile, text);
  const headersFile = path.join(dir, 'headers.json');
  fs.writeFileSync(
    headersFile,
    JSON.stringify({
      'content-type': res.headers.get('content-type'),
      'content-length': String(Buffer.byteLength(text)),
      'cache-control': 'public, max-age=3600',
      etag: res.headers.get('etag'),
    }),
  );
  const { child: bareProc, info: bare } = await start(
    'bare',
    [process.execPath, __filename, '--bare', bodyFile, headersFile],
    'bare-ready ',
  );
  const bareUrl = `${bare.url}/api/v1/providers`;
  const check = await call('GET', bareUrl);
  if (check.text !== text) throw new Error('the bare server does not answer the same bytes');

  console.log(
    `providers bench: load from ${params.loadgen}, ${params.endpoints} providers, ${Buffer.byteLength(text)} bytes (page ${Buffer.byteLength(page.text)} bytes, ${pageWire} gzipped), ${params.connections} connections, ${params.rounds} × ${params.duration_s} s per server${pinning ? ', servers on CPU 0, load on CPU 1' : ', unpinned'}`,
  );
  if (params.warmup_s > 0)
    for (const url of [svcUrl, bareUrl, pageUrl]) await load(url, url === pageUrl ? BROWSER_HEADERS : {}, params.warmup_s);

  const runs = await measureRounds({ svc: svcUrl, bare: bareUrl, page: pageUrl }, { bare: bareProc.pid, control: controlProc.pid });

  return report(runs);
}

if (process.argv[2] === '--bare') serveBare();
else
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(`bench:providers failed: ${err.message}`);
      process.exit(1);
    },
  );
