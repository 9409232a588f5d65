'use strict';
/**
 * Interleaved rounds and what is derived from them: per-target medians, per-engine medians over
 * the engine's gateway processes, and ratios to the baselines, including the paired per-round
 * CPU ratio (each gateway run divided by the baseline's run of the same round, then the median).
 */
const { median, round, ratio } = require('./stats');

const FOREIGN_WARN_PCT = 5;

function fmt(v, digits = 1) {
  return v === null || v === undefined ? '—' : Number(v).toFixed(digits);
}

function table(rows, headers) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function runLine(label, r) {
  const foreign = r.machine.foreign_cpu_pct;
  return `  ${label} ${fmt(r.req_per_s, 0).padStart(7)} req/s  p50 ${fmt(r.p50_ms, 2)} ms  p99 ${fmt(r.p99_ms, 2)} ms  cpu ${fmt(r.cpu_us_per_req)} µs/req  non-2xx ${r.non2xx}  errors ${r.errors}${foreign > FOREIGN_WARN_PCT ? `  [other processes: ${foreign}% CPU]` : ''}`;
}

/**
 * Warm each target up, then load every target in turn, `rounds` times; every run is appended to
 * `results.runs` with `phase`, `round` and `target`.
 * @param {{phase: string, targets: {name: string}[], rounds: number, seconds: number, warmup: number,
 *          load: (target: object, seconds: number) => Promise<object>, quiet: () => Promise<object|null>,
 *          results: object, log: (s: string) => void, note: (s: string) => void}} o
 */
async function interleave(o) {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const width = Math.max(...o.targets.map((t) => t.name.length));
  if (o.warmup > 0) {
    o.log(`warm-up: ${o.warmup}s per target`);
    for (const t of o.targets) {
      const w = await o.load(t, o.warmup);
      if (w.non2xx > 0 || w.errors > 0)
        o.note(`${o.phase} warm-up ${t.name}: ${w.non2xx} non-2xx, ${w.errors} errors (${JSON.stringify(w.status_codes)})`);
      await sleep(300);
    }
  }
  o.log(`${o.rounds} rounds × ${o.targets.length} targets × ${o.seconds}s`);
  for (let r = 1; r <= o.rounds; r++) {
    for (const t of o.targets) {
      const quiet = await o.quiet();
      const run = await o.load(t, o.seconds);
      o.results.runs.push({ phase: o.phase, round: r, target: t.name, ...run, quiet });
      o.log(runLine(`r${r} ${t.name.padEnd(width)}`, run));
      if (run.non2xx > 0 || run.errors > 0 || run.timeouts > 0)
        o.note(
          `${o.phase} ${t.name} round ${r}: ${run.non2xx} non-2xx, ${run.errors} errors, ${run.timeouts} timeouts (${JSON.stringify(run.status_codes)})`,
        );
      await sleep(500);
    }
  }
}

function mediansOf(runs) {
  const pick = (f) => median(runs.map((r) => r[f]));
  return {
    runs: runs.length,
    req_per_s: pick('req_per_s'),
    p50_ms: pick('p50_ms'),
    p99_ms: pick('p99_ms'),
    cpu_us_per_req: pick('cpu_us_per_req'),
    non2xx_total: runs.reduce((s, r) => s + r.non2xx, 0),
    errors_total: runs.reduce((s, r) => s + r.errors, 0),
    upstream_cpu_us_per_req: median(runs.map((r) => r.cpu_us_per_req_by_process.upstream ?? null)),
    control_cpu_us_per_req: median(runs.map((r) => r.cpu_us_per_req_by_process.control ?? null)),
    foreign_cpu_pct_max: Math.max(0, ...runs.map((r) => r.machine.foreign_cpu_pct ?? 0)),
    req_per_s_spread:
      runs.length > 1
        ? round(
            (Math.max(...runs.map((r) => r.req_per_s)) - Math.min(...runs.map((r) => r.req_per_s))) / median(runs.map((r) => r.req_per_s)),
            3,
          )
        : null,
  };
}

/** Median of `gateway run ÷ baseline run` over the rounds (and processes) of `names`. */
function paired(runs, names, baseline, field = 'cpu_us_per_req') {
  const values = runs
    .filter((r) => names.includes(r.target))
    .map((r) => ratio(r[field], runs.find((x) => x.target === baseline && x.round === r.round)?.[field] ?? null));
  return round(median(values), 3);
}

/**
 * Medians per target and per group (a gateway engine's processes together), and the ratios of
 * every group to every baseline.
 * @param {object[]} allRuns every run of the bench
 * @param {string} phase
 * @param {{name: string, group: string}[]} targets `group` is the engine group for gateways, else the name
 * @param {string[]} baselines target names to compare with
 */
function summarise(allRuns, phase, targets, baselines) {
  const runs = allRuns.filter((r) => r.phase === phase);
  const medians = {};
  for (const t of targets) medians[t.name] = mediansOf(runs.filter((r) => r.target === t.name));
  const groups = {};
  for (const t of targets) (groups[t.group] ??= []).push(t.name);
  const groupMedians = {};
  for (const [group, names] of Object.entries(groups)) groupMedians[group] = mediansOf(runs.filter((r) => names.includes(r.target)));
  const ratios = {};
  for (const [group, names] of Object.entries(groups)) {
    if (baselines.includes(group)) continue;
    for (const base of baselines) {
      const g = groupMedians[group];
      const b = groupMedians[base];
      ratios[`${group}/${base}`] = {
        req_per_s: ratio(g.req_per_s, b.req_per_s),
        p99_ms: ratio(g.p99_ms, b.p99_ms),
        cpu_us_per_req: ratio(g.cpu_us_per_req, b.cpu_us_per_req),
        cpu_us_per_req_paired: paired(runs, names, base),
        cpu_us_per_req_paired_by_process: Object.fromEntries(names.map((n) => [n, paired(runs, [n], base)])),
      };
    }
  }
  return { medians, groups: groupMedians, ratios };
}

function printSummary(log, title, summary) {
  log(`\n${title}`);
  log(
    table(
      Object.entries(summary.medians).map(([name, m]) => [
        name,
        fmt(m.req_per_s, 0),
        fmt(m.p50_ms, 2),
        fmt(m.p99_ms, 2),
        fmt(m.cpu_us_per_req),
        m.non2xx_total + m.errors_total,
      ]),
      ['target (medians)', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'non-2xx+err'],
    ),
  );
  log('');
  log(
    table(
      Object.entries(summary.ratios).map(([name, r]) => [
        name,
        fmt(r.req_per_s, 3),
        fmt(r.p99_ms, 3),
        fmt(r.cpu_us_per_req, 3),
        fmt(r.cpu_us_per_req_paired, 3),
        Object.values(r.cpu_us_per_req_paired_by_process)
          .map((v) => fmt(v, 3))
          .join(' / '),
      ]),
      ['ratio', 'req/s', 'p99', 'CPU µs/req', 'CPU paired', 'paired per process'],
    ),
  );
}

module.exports = { FOREIGN_WARN_PCT, fmt, table, runLine, interleave, summarise, printSummary };
