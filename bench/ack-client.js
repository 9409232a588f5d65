'use strict';
/**
 * The gateway's ack client against undici's, side by side: what each costs a gateway per
 * change (docs/scaling.md, "SyncPoster"). One control, and gateways of both kinds attached at
 * once, alternately started (hand-written, undici, hand-written, …: two or more of each, since
 * one node process can run ~10 % slower than another for its whole life); the undici ones are
 * the same build with bench/lib/undici-acks.js preloaded. Then reps of revocations, each one
 * waited for on control (`/_admin/v1/sync/wait`), so every gateway reads, applies and acks the
 * same changes at the same time; a gateway's CPU over a rep is the sum of its threads'
 * `/proc/<pid>/task/<tid>/schedstat` run time (ns). Per rep, a kind's figure is the mean of its
 * gateways; the medians over the reps are reported with the undici / hand-written ratio.
 *
 *   npm run build && node bench/ack-client.js
 *
 * BENCH_ACK_REPS (5), BENCH_ACK_CHANGES (200 per rep), BENCH_ACK_GATEWAYS (2 of each kind); 50
 * changes first as a warm-up, not counted.
 * Pinned when taskset and two CPUs are there: the gateways on CPU 0, control and this driver on
 * CPU 1. Writes results/ack-client.json.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { snapshotDist } = require('./lib/app');
const { envInt } = require('./lib/env');
const { hasTaskset, nproc, stopAll, killAllSync } = require('./lib/proc');
const { median, round } = require('./lib/stats');
const { Admin, startControl, startGateway, waitGatewayVersion } = require('./lib/svc');

const REPS = envInt('BENCH_ACK_REPS', 5, 1);
const CHANGES = envInt('BENCH_ACK_CHANGES', 200, 10);
const EACH = envInt('BENCH_ACK_GATEWAYS', 2, 1);
const WARMUP = 50;
const KINDS = ['hand-written', 'undici'];

const log = (msg) => process.stdout.write(`[ack-client] ${msg}\n`);

/** Run time of every thread of `pid` so far, in µs. */
function runUs(pid) {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ns / 1000;
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-ack-'));
  const logDir = path.join(tmp, 'logs');
  fs.mkdirSync(logDir);
  const dist = snapshotDist(tmp);
  const pinned = hasTaskset() && nproc() >= 2;
  const [cpuGateways, cpuControl] = pinned ? [0, 1] : [null, null];
  log(
    `work dir ${tmp}; ${pinned ? 'gateways on CPU 0, control on CPU 1' : 'unpinned'}; load average ${os.loadavg().map((l) => l.toFixed(1))}`,
  );

  const dataDir = path.join(tmp, 'control');
  fs.mkdirSync(dataDir, { mode: 0o700 });
  const control = startControl({ dataDir, cpu: cpuControl, logDir });
  const controlUrl = (await control.start()).urls.control;
  const admin = new Admin(controlUrl, dataDir);

  const keys = [];
  for (let i = 0; i < WARMUP + REPS * CHANGES; i++) keys.push((await admin.issueKey({ name: `ack-${i}` })).id);
  const { version } = await admin.issueKey({ name: 'ack-marker' });

  const gateways = [];
  for (let i = 0; i < EACH; i++) {
    for (const kind of KINDS) {
      const id = `gw-${kind === 'undici' ? 'u' : 'h'}${i}`;
      const undici = kind === 'undici';
      const proc = startGateway({
        dataDir,
        controlUrl,
        cpu: cpuGateways,
        logDir,
        id,
        name: id,
        nodeArgs: undici ? ['--require', path.join(__dirname, 'lib', 'undici-acks.js')] : [],
        env: undici ? { BENCH_ACK_DIST: dist } : {},
      });
      const url = (await proc.start()).urls.gateway;
      await waitGatewayVersion(url, version, dataDir);
      gateways.push({ kind, id, proc });
    }
  }
  const waited = await admin.waitSync(version, 60_000);
  if (!waited.complete || waited.gateways !== gateways.length)
    throw new Error(`gateways not all at v${version}: ${JSON.stringify(waited)}`);

  // Warm-up, not counted: both clients' code optimised and their connections open.
  for (let i = 0; i < WARMUP; i++) {
    const revoked = await admin.revokeKey(keys.pop());
    await admin.waitSync(revoked.version, 30_000);
  }
  const reps = [];
  for (let rep = 0; rep < REPS; rep++) {
    const before = gateways.map((g) => runUs(g.proc.pid));
    const t0 = Date.now();
    for (let i = 0; i < CHANGES; i++) {
      const revoked = await admin.revokeKey(keys.pop());
      const w = await admin.waitSync(revoked.version, 30_000);
      if (!w.complete) throw new Error(`revocation --wait incomplete: ${JSON.stringify(w)}`);
    }
    const perGateway = gateways.map((g, i) => ({ id: g.id, kind: g.kind, us: (runUs(g.proc.pid) - before[i]) / CHANGES }));
    const byKind = Object.fromEntries(
      KINDS.map((kind) => {
        const mine = perGateway.filter((g) => g.kind === kind).map((g) => g.us);
        return [kind, mine.reduce((a, b) => a + b, 0) / mine.length];
      }),
    );
    const ratio = byKind.undici / byKind['hand-written'];
    reps.push({ rep: rep + 1, ms: Date.now() - t0, load: os.loadavg()[0], perGateway, byKind, ratio });
    log(
      `rep ${rep + 1}: µs per change per gateway: hand-written ${round(byKind['hand-written'], 0)}, undici ${round(byKind.undici, 0)} ` +
        `(×${round(ratio, 3)}); each: ${perGateway.map((g) => `${g.id} ${round(g.us, 0)}`).join(', ')}; load ${os.loadavg()[0].toFixed(1)}`,
    );
  }
  const summary = {
    hand_written_us: round(median(reps.map((r) => r.byKind['hand-written'])), 0),
    undici_us: round(median(reps.map((r) => r.byKind.undici)), 0),
    median_ratio: round(median(reps.map((r) => r.ratio)), 3),
  };
  summary.hand_written_saves_pct = round((1 - summary.hand_written_us / summary.undici_us) * 100, 1);
  log(
    `medians over ${REPS} reps of ${CHANGES} changes: hand-written ${summary.hand_written_us} µs, undici ${summary.undici_us} µs per change per gateway; ` +
      `undici / hand-written ×${summary.median_ratio} (median of the reps' ratios); the hand-written client saves ${summary.hand_written_saves_pct} %`,
  );
  const out = path.join(__dirname, 'results', 'ack-client.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ params: { reps: REPS, changes: CHANGES, each: EACH, pinned }, reps, summary }, null, 2) + '\n');
  log(`wrote ${out}`);
  return tmp;
}

process.on('SIGINT', () => {
  killAllSync();
  process.exit(130);
});

main()
  .then(async (tmp) => {
    await stopAll();
    fs.rmSync(tmp, { recursive: true, force: true });
  })
  .catch(async (err) => {
    process.stderr.write(`${err.stack ?? err}\n`);
    await stopAll();
    process.exitCode = 1;
  });
