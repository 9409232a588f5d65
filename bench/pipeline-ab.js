#!/usr/bin/env node
'use strict';
/**
 * What the gateway's request pipeline costs on each engine, apart from the engine: per engine,
 * the real pipeline on the real engine without control (`gw`), the engine alone (`engine`), and
 * the bare proxy of that library, loaded in interleaved rounds like `npm run bench`'s phase 1
 * (50 connections, 200-byte POSTs, 76-byte answers, the server under test alone on CPU 0).
 * Printed: CPU µs per request of each (median over rounds), the engine and the pipeline against
 * the bare proxy, and the pipeline's own cost (`gw` − `engine`, paired by round). With two
 * builds, each build's `gw` and `engine` are loaded, and after ÷ before is printed per target
 * (bench/README.md, "Where the gateway's CPU goes").
 *
 *   node bench/pipeline-ab.js <dist>                  (one build)
 *   node bench/pipeline-ab.js <before dist> <after dist>
 *
 * `BENCH_ROUNDS` (default 7) and `BENCH_DURATION` (seconds per run, default 4) set the rounds.
 */
const path = require('node:path');
const { Proc, pinSelf, clockTicks, stopAll, hasTaskset, nproc } = require('./lib/proc');
const { measure, jsonBody } = require('./lib/load');
const { envInt } = require('./lib/env');
const { internal } = require('./lib/internals');
const { median } = require('./lib/stats');

const dists = process.argv.slice(2).map((d) => path.resolve(d));
if (dists.length < 1 || dists.length > 2) {
  console.error('usage: node bench/pipeline-ab.js <dist> | <before dist> <after dist>');
  process.exit(2);
}
const labels = dists.length === 2 ? ['before', 'after'] : [''];
const ROUNDS = envInt('BENCH_ROUNDS', 7, 1);
const DURATION = envInt('BENCH_DURATION', 4, 1);
const ENGINES = ['http-proxy', 'undici'];
const servers = path.join(__dirname, 'servers');

/** @param {number[]} xs */
const med = (xs) => /** @type {number} */ (median(xs));
const fmt = (n, d = 3) => n.toFixed(d);

async function main() {
  const pinned = hasTaskset() && nproc() >= 2;
  if (pinned) pinSelf(1);
  else console.log('! unpinned (no taskset, or one CPU): numbers are not comparable to pinned ones');
  const clkTck = clockTicks();
  const key = internal('protocol/keys', dists[0]).generateKey();
  const up = new Proc('upstream', [process.execPath, path.join(servers, 'upstream.js')], { cpu: pinned ? 1 : null });
  const base = `${(await up.start()).urls.upstream}/api`;
  /** @type {{name: string, url: string, pid: number, headers: Record<string, string>}[]} */
  const targets = [];
  const start = async (name, argv, suffix, headers = {}) => {
    const proc = new Proc(name, [process.execPath, ...argv], { cpu: pinned ? 0 : null });
    const url = (await proc.start()).urls.proxy;
    targets.push({ name, url: `${url}${suffix}`, pid: proc.pid, headers });
  };
  for (const engine of ENGINES) {
    for (const [i, dist] of dists.entries()) {
      const tag = labels[i] ? `-${labels[i]}` : '';
      const server = path.join(servers, 'pipeline-server.js');
      await start(`gw-${engine}${tag}`, [server, dist, engine, base, 'gateway', key], '/v1/bench/echo', { authorization: `Bearer ${key}` });
      await start(`engine-${engine}${tag}`, [server, dist, engine, base, 'engine', key], '/echo');
    }
  }
  await start('bare-http-proxy', [path.join(servers, 'bare-proxy.js'), base], '/echo');
  await start('bare-undici', [path.join(servers, 'undici-proxy.js'), base], '/echo');

  const body = jsonBody(200);
  const load = (t, seconds) =>
    measure({ url: t.url, headers: t.headers, body, connections: 50, duration: seconds, pids: { server: t.pid }, clkTck });
  for (const t of targets) {
    const r = await load(t, 2); // warm-up, and a check that every target answers 2xx
    if (r.non2xx > 0 || r.errors > 0) throw new Error(`${t.name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
  }
  /** @type {Record<string, number[]>} */
  const cpu = {};
  for (let round = 1; round <= ROUNDS; round++) {
    for (const t of round % 2 ? targets : [...targets].reverse()) {
      const r = await load(t, DURATION);
      (cpu[t.name] ??= []).push(r.cpu_us_per_req);
      console.log(
        `r${round} ${t.name.padEnd(24)} ${String(r.cpu_us_per_req).padStart(6)} µs/req  ${Math.round(r.req_per_s)} req/s  other processes ${r.machine.foreign_cpu_pct}% CPU`,
      );
    }
  }
  report(cpu);
  await stopAll();
}

/** @param {Record<string, number[]>} cpu */
function report(cpu) {
  const paired = (a, b, op) => med(cpu[a].map((x, i) => op(x, cpu[b][i])));
  const ratio = (a, b) => paired(a, b, (x, y) => x / y);
  console.log(`\nmedians over ${ROUNDS} rounds of ${DURATION} s (CPU µs per request)`);
  for (const [name, xs] of Object.entries(cpu)) console.log(`  ${name.padEnd(24)} ${fmt(med(xs), 1).padStart(6)}   [${xs.join(', ')}]`);
  console.log('\npaired by round');
  for (const engine of ENGINES) {
    const bare = `bare-${engine}`;
    for (const label of labels) {
      const tag = label ? `-${label}` : '';
      const [gw, eng] = [`gw-${engine}${tag}`, `engine-${engine}${tag}`];
      console.log(
        `  ${engine}${label ? ` (${label})` : ''}: engine / ${bare} ${fmt(ratio(eng, bare))}, gw / ${bare} ${fmt(ratio(gw, bare))}, pipeline (gw − engine) ${fmt(
          paired(gw, eng, (x, y) => x - y),
          1,
        )} µs`,
      );
    }
    if (labels.length === 2) {
      for (const kind of ['gw', 'engine'])
        console.log(`  ${engine}: ${kind} after / before ${fmt(ratio(`${kind}-${engine}-after`, `${kind}-${engine}-before`))}`);
    }
  }
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exitCode = 1;
});
