#!/usr/bin/env node
'use strict';
/**
 * `npm run bench:keys-list`: does listing a million keys stall control? On the built code
 * (`dist/`):
 *
 * 1. fill: BENCH_KEYS keys (default 1,000,000; 1 % revoked, 1 % expired) straight into a fresh
 *    control database through the store, in one transaction.
 * 2. start `svcctl serve control` on it as its own process (pinned to CPU 0 with taskset when
 *    there are ≥ 2 CPUs; this process, the clients, on CPU 1; BENCH_PIN=0 leaves both to the
 *    scheduler, which is fairer on a machine other work shares).
 * 3. baseline: a gateway's sync ack (`POST /_sync/v1/ack`, one in flight, every
 *    BENCH_ACK_INTERVAL_MS, sent from a worker thread so the list client's JSON parsing never
 *    delays it) for BENCH_BASELINE_S seconds, with nothing else running.
 * 4. the same acks while a client pages through every key the way `svcctl keys list` does
 *    (`GET /_admin/v1/keys?limit=1000&cursor=…` until `next_cursor` is null), then again with a
 *    sparse filter (`status=expired`, so most pages are bounded scans, not full pages). The
 *    listing runs in bursts with short pauses; acks sent in the pauses are a reference taken
 *    under the same machine load (the numbers swing with whatever else the machine runs).
 *
 * 5. in this process, the CPU time of one step of a page (what control runs between two
 *    yields) over every step of the whole list, and of serialising one page.
 *
 * Reports the acks' p50/p99/max latency in each phase, and the list's time, pages and per-page
 * latency. Writes bench/results/keys-list.json. Timings only here, never in tests.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const readline = require('node:readline');
const { spawn, execFileSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { performance } = require('node:perf_hooks');
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');
const { percentile, round } = require('./lib/stats');
const { envInt } = require('./lib/env');
const { controlArgs } = require('./lib/svc');
const { internal } = require('./lib/internals');

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const CLI = path.join(DIST, 'cli', 'index.js');
const RESULTS = path.join(__dirname, 'results', 'keys-list.json');

const params = {
  keys: envInt('BENCH_KEYS', 1_000_000, 1),
  page: envInt('BENCH_PAGE', 1_000, 1),
  ack_interval_ms: envInt('BENCH_ACK_INTERVAL_MS', 5, 0),
  baseline_s: envInt('BENCH_BASELINE_S', 5, 1),
  burst_ms: envInt('BENCH_LIST_BURST_MS', 2_000, 1),
  pause_ms: envInt('BENCH_LIST_PAUSE_MS', 1_000, 0),
};

const pinning = (() => {
  if (process.env.BENCH_PIN === '0') return false;
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return os.cpus().length >= 2;
  } catch {
    return false;
  }
})();

// ---------------------------------------------------------------------------------------
// 1. Fill

async function fill(dbPath) {
  const { SqliteStore } = internal('control/store/index', DIST);
  const { makeReceipts } = internal('control/receipts/maker', DIST);
  const { newId } = internal('protocol/keys', DIST);
  // One transaction (no state change recorded: control is not running yet, and starts from the file).
  const store = await SqliteStore.open(dbPath, { receiptsCore: makeReceipts });
  const now = Date.now();
  const started = performance.now();
  const revoke = [];
  await store.mutate({ actor: 'bench', now }, { action: 'bench.fill_keys', detail: { keys: params.keys } }, async (tx) => {
    for (let i = 0; i < params.keys; i++) {
      const id = newId('key');
      // Oldest first, a few keys per millisecond, over the last day or so.
      const createdAt = now - 86_400_000 + Math.floor(i / 12);
      await tx.keys.insert({
        id,
        name: `bench key ${i}`,
        prefix: 'svc_beta_' + id.slice(4, 8),
        hash: randomBytes(32).toString('hex'),
        created_at: createdAt,
        created_by: 'bench',
        expires_at: i % 100 === 1 ? createdAt + 1000 : i % 100 === 2 ? now + 30 * 86_400_000 : null,
        wallet: null,
        endpoints: [],
        limit: null,
        application_id: null,
      });
      if (i % 100 === 0) revoke.push(id);
    }
    for (const id of revoke) await tx.keys.revoke(id, now);
  });
  const ms = performance.now() - started;
  await store.close();
  return { keys: params.keys, revoked: revoke.length, ms: Math.round(ms) };
}

// ---------------------------------------------------------------------------------------
// 2. Control as its own process

const children = [];

function startControl(dataDir) {
  const argv = [process.execPath, CLI, ...controlArgs(dataDir)];
  const cmd = pinning ? ['taskset', '-c', '0', ...argv] : argv;
  const child = spawn(cmd[0], cmd.slice(1), {
    cwd: ROOT,
    env: { ...process.env, SVC_SUPERVISED: '1', SVC_LOG_LEVEL: 'warn', SVC_SETTLER_CADENCE_MS: '3600000' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    const limit = setTimeout(() => reject(new Error(`control not ready within 120 s; stderr: ${stderr}`)), 120_000);
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      if (!line.startsWith('svc-ready ')) return;
      clearTimeout(limit);
      resolve({ child, info: JSON.parse(line.slice('svc-ready '.length)) });
    });
    child.on('exit', (code) => {
      clearTimeout(limit);
      reject(new Error(`control exited (${code}) before ready; stderr: ${stderr}`));
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

// ---------------------------------------------------------------------------------------
// HTTP with kept-alive sockets, so a latency is control's time plus one loopback round trip.

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

function request(method, url, token, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const req = http.request(url, {
      method,
      agent,
      headers: {
        authorization: `Bearer ${token}`,
        ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) reject(new Error(`${method} ${url} → ${res.statusCode}: ${text.slice(0, 300)}`));
        else resolve(text);
      });
    });
    req.end(payload);
  });
}

// ---------------------------------------------------------------------------------------
// 3, 4. Acks, alone and beside a listing

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Send acks one at a time from a worker thread (its own event loop, so parsing a big page in
 * this thread never delays an ack's timing) until `stop()`; resolves with their latencies (ms).
 */
function ackLoop(control, syncToken, version) {
  const worker = new Worker(path.join(__dirname, 'keys-list.js'), {
    workerData: { ackWorker: true, url: `${control}/_sync/v1/ack`, token: syncToken, version, intervalMs: params.ack_interval_ms },
  });
  const done = new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    stop: () => {
      worker.postMessage('stop');
      return done;
    },
  };
}

/** The worker's side of {@link ackLoop}. */
async function runAckWorker({ url, token, version, intervalMs }) {
  let running = true;
  parentPort.once('message', () => (running = false));
  const latencies = [];
  while (running) {
    const t0 = performance.now();
    await request('POST', url, token, { gateway_id: 'bench-gw', version, ok: true });
    latencies.push([performance.timeOrigin + t0, performance.now() - t0]);
    if (intervalMs > 0) await sleep(intervalMs);
  }
  parentPort.postMessage(latencies);
  agent.destroy();
}

const wallNow = () => performance.timeOrigin + performance.now();

/**
 * Page through the whole list like `svcctl keys list`, in bursts of BENCH_LIST_BURST_MS with a
 * pause of BENCH_LIST_PAUSE_MS after each: acks sent in the pauses are the quiet reference taken
 * under the same machine load as the acks sent during the bursts. Returns per-page latencies,
 * totals (`ms` is listing time without the pauses) and the bursts as wall-clock intervals.
 */
async function listAll(control, adminToken, query) {
  const pageMs = [];
  const bursts = [];
  let keys = 0;
  let cursor = null;
  let listingMs = 0;
  let burstStart = wallNow();
  do {
    if (wallNow() - burstStart >= params.burst_ms) {
      const end = wallNow();
      bursts.push([burstStart, end]);
      listingMs += end - burstStart;
      await sleep(params.pause_ms);
      burstStart = wallNow();
    }
    const q = new URLSearchParams(query);
    q.set('limit', String(params.page));
    if (cursor !== null) q.set('cursor', cursor);
    const t0 = performance.now();
    const page = JSON.parse(await request('GET', `${control}/_admin/v1/keys?${q}`, adminToken));
    pageMs.push(performance.now() - t0);
    keys += page.keys.length;
    cursor = page.next_cursor;
  } while (cursor !== null);
  const end = wallNow();
  bursts.push([burstStart, end]);
  listingMs += end - burstStart;
  return { keys, pages: pageMs.length, ms: listingMs, pageMs, bursts };
}

/** Split acks (`[sent_at, latency]`) into those sent during a burst and those sent in a pause. */
function splitAcks(acks, bursts) {
  const during = [];
  const between = [];
  for (const [at, ms] of acks) {
    if (at < bursts[0][0] || at > bursts[bursts.length - 1][1]) continue;
    (bursts.some(([a, b]) => at >= a && at <= b) ? during : between).push(ms);
  }
  return { during, between };
}

/** utime + stime of a process (all threads), in ms; null off Linux. */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();
function cpuMs(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(rest[11]) + Number(rest[12])) * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}

/**
 * 5. The longest stretch control's event loop spends on a listing without yielding: one step
 * of a page (read, secrets, views, as `listKeys` does it), timed as CPU time of this process so
 * other work on the machine does not inflate it; and the final JSON serialisation of a page.
 */
async function stepCost(dbPath) {
  const { SqliteStore } = internal('control/store/index', DIST);
  const { makeReceipts } = internal('control/receipts/maker', DIST);
  const { keyView } = internal('control/keys', DIST);
  const { KEY_LIST_STEP } = internal('control/admin/keys', DIST);
  // The statements' own CPU per step: on SQLite each of a step's reads answers an already-settled
  // promise, so the awaits below run no other work of this process in between.
  const store = await SqliteStore.open(dbPath, { receiptsCore: makeReceipts });
  const now = Date.now();
  const cpu = [];
  let after = null;
  let views = [];
  do {
    const c0 = process.cpuUsage();
    const page = await store.keys.page({ limit: KEY_LIST_STEP, after, now });
    const secrets = await store.keys.liveSecretsOf(
      page.rows.map((r) => r.id),
      now,
    );
    const stepViews = page.rows.map((row) => keyView(row, secrets.get(row.id) ?? [], now));
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    if (views.length < params.page) views = views.concat(stepViews);
    after = page.next;
  } while (after !== null);
  const c0 = process.cpuUsage();
  for (let i = 0; i < 20; i++) JSON.stringify({ keys: views.slice(0, params.page), next_cursor: 'x' });
  const c = process.cpuUsage(c0);
  await store.close();
  return { step_keys: KEY_LIST_STEP, step_cpu_ms: summary(cpu), serialise_cpu_ms: round((c.user + c.system) / 1000 / 20, 2) };
}

function summary(latencies) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50_ms: round(percentile(sorted, 50), 2),
    p99_ms: round(percentile(sorted, 99), 2),
    max_ms: round(sorted[sorted.length - 1] ?? null, 2),
  };
}

const fmt = (s) =>
  `n=${String(s.n).padStart(6)}  p50 ${String(s.p50_ms).padStart(7)} ms  p99 ${String(s.p99_ms).padStart(7)} ms  max ${String(s.max_ms).padStart(7)} ms`;

async function main() {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  if (pinning) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-keys-'));
  process.on('exit', () => {
    stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const filled = await fill(path.join(dataDir, 'control.db'));
  console.log(
    `fill: ${filled.keys.toLocaleString('en')} keys (${filled.revoked.toLocaleString('en')} revoked) in ${(filled.ms / 1000).toFixed(1)} s`,
  );

  const { info } = await startControl(dataDir);
  const control = info.urls.control;
  const adminToken = fs.readFileSync(path.join(dataDir, 'admin.token'), 'utf8').trim();
  const syncToken = fs.readFileSync(path.join(dataDir, 'sync.token'), 'utf8').trim();
  const { version } = JSON.parse(await request('GET', `${control}/_admin/v1/status`, adminToken));
  console.log(`control: ${control} (pid ${children[0].pid}${pinning ? ', CPU 0; clients on CPU 1' : ''})`);

  // Warm up both paths (statement caches, JIT) before measuring.
  for (let i = 0; i < 200; i++) await request('POST', `${control}/_sync/v1/ack`, syncToken, { gateway_id: 'bench-gw', version, ok: true });
  for (let i = 0; i < 5; i++) await request('GET', `${control}/_admin/v1/keys?limit=${params.page}`, adminToken);

  const results = { params, node: process.version, cpus: os.cpus().length, pinned: pinning, fill: filled, phases: {} };

  const base = ackLoop(control, syncToken, version);
  await sleep(params.baseline_s * 1000);
  const baseline = summary((await base.stop()).map(([, ms]) => ms));
  results.phases.baseline = { ack: baseline };
  console.log(`ack alone${' '.repeat(30)}${fmt(baseline)}`);

  for (const [name, query] of /** @type {[string, Record<string, string>][]} */ ([
    ['list all keys', {}],
    ['list status=expired (sparse)', { status: 'expired' }],
  ])) {
    const cpu0 = cpuMs(children[0].pid);
    const acks = ackLoop(control, syncToken, version);
    const listed = await listAll(control, adminToken, query);
    const split = splitAcks(await acks.stop(), listed.bursts);
    const ack = summary(split.during);
    const quiet = summary(split.between);
    const cpu1 = cpuMs(children[0].pid);
    const page = summary(listed.pageMs);
    // Control's CPU time per page (acks included, a small share): what one page costs its event loop.
    const controlCpuPerPage = cpu0 === null || cpu1 === null ? null : round((cpu1 - cpu0) / listed.pages, 2);
    results.phases[name] = {
      query,
      keys: listed.keys,
      pages: listed.pages,
      list_ms: Math.round(listed.ms),
      page,
      control_cpu_ms_per_page: controlCpuPerPage,
      ack,
      ack_in_pauses: quiet,
    };
    console.log(`ack while ${name.padEnd(29)}${fmt(ack)}`);
    console.log(`ack in the pauses of that list${' '.repeat(9)}${fmt(quiet)}`);
    console.log(
      `  ${name}: ${listed.keys.toLocaleString('en')} keys in ${listed.pages.toLocaleString('en')} pages, ${(listed.ms / 1000).toFixed(1)} s; ` +
        `page p50 ${page.p50_ms} ms, p99 ${page.p99_ms} ms, max ${page.max_ms} ms; control CPU ${controlCpuPerPage} ms/page`,
    );
  }

  results.steps = await stepCost(path.join(dataDir, 'control.db'));
  const st = results.steps;
  console.log(
    `one step of a page (${st.step_keys} keys, read + secrets + views), CPU time in this process: ` +
      `p50 ${st.step_cpu_ms.p50_ms} ms, p99 ${st.step_cpu_ms.p99_ms} ms, max ${st.step_cpu_ms.max_ms} ms over ${st.step_cpu_ms.n} steps; ` +
      `serialising a ${params.page}-key page: ${st.serialise_cpu_ms} ms`,
  );

  fs.mkdirSync(path.dirname(RESULTS), { recursive: true });
  fs.writeFileSync(RESULTS, JSON.stringify(results, null, 2) + '\n');
  console.log(`wrote ${path.relative(ROOT, RESULTS)}`);
}

if (!isMainThread && workerData?.ackWorker) {
  void runAckWorker(workerData);
} else {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
