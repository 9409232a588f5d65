'use strict';
/** The targets of `npm run bench` judged on its results (bench/README.md), and the closing report. */
const { FOREIGN_WARN_PCT, fmt } = require('./rounds');
const { ENGINES, TARGETS, log } = require('./run-params');

function evaluate(results) {
  const t = [];
  const add = (name, value, limit, met, unit = '') =>
    t.push({ name, value, limit, unit, met: value === null || value === undefined ? false : met });
  const main = results.phases.main;
  const r = (name) => main?.ratios[name];
  const undiciVsBare = r('gateway-undici/bare-http-proxy');
  const undiciVsUndici = r('gateway-undici/bare-undici');
  const hpVsBare = r('gateway-http-proxy/bare-http-proxy');
  if (undiciVsBare) {
    add(
      'gateway (undici) CPU µs/req ≤ 1.0× bare http-proxy (paired)',
      undiciVsBare.cpu_us_per_req_paired,
      TARGETS.undici_cpu_vs_bare_http_proxy_max,
      undiciVsBare.cpu_us_per_req_paired <= TARGETS.undici_cpu_vs_bare_http_proxy_max,
      '×',
    );
    add(
      'gateway (undici) p99 ≤ bare http-proxy p99',
      undiciVsBare.p99_ms,
      TARGETS.undici_p99_vs_bare_http_proxy_max,
      undiciVsBare.p99_ms <= TARGETS.undici_p99_vs_bare_http_proxy_max,
      '×',
    );
    add(
      'gateway (undici) req/s ≥ bare http-proxy req/s',
      undiciVsBare.req_per_s,
      TARGETS.undici_req_per_s_vs_bare_http_proxy_min,
      undiciVsBare.req_per_s >= TARGETS.undici_req_per_s_vs_bare_http_proxy_min,
      '×',
    );
  }
  if (undiciVsUndici)
    add(
      `gateway (undici) CPU µs/req ≤ ${TARGETS.undici_cpu_vs_bare_undici_max}× bare undici (paired)`,
      undiciVsUndici.cpu_us_per_req_paired,
      TARGETS.undici_cpu_vs_bare_undici_max,
      undiciVsUndici.cpu_us_per_req_paired <= TARGETS.undici_cpu_vs_bare_undici_max,
      '×',
    );
  if (hpVsBare)
    add(
      `gateway (http-proxy) CPU µs/req ≤ ${TARGETS.http_proxy_cpu_vs_bare_http_proxy_max}× bare http-proxy (paired)`,
      hpVsBare.cpu_us_per_req_paired,
      TARGETS.http_proxy_cpu_vs_bare_http_proxy_max,
      hpVsBare.cpu_us_per_req_paired <= TARGETS.http_proxy_cpu_vs_bare_http_proxy_max,
      '×',
    );
  for (const engine of ENGINES) {
    const prepaid = results.phases.prepaid?.ratios[`prepaid-${engine}`];
    if (prepaid)
      add(
        `prepaid endpoint CPU µs/req ≤ 1.03× postpaid (${engine}, paired)`,
        prepaid.cpu_us_per_req_paired,
        TARGETS.prepaid_cpu_vs_postpaid_max,
        prepaid.cpu_us_per_req_paired <= TARGETS.prepaid_cpu_vs_postpaid_max,
        '×',
      );
  }
  const non2xx = results.runs.reduce((s, x) => s + x.non2xx + x.errors, 0);
  add('no non-2xx answers or errors in any run', non2xx, 0, non2xx === 0);
  for (const [engine, rev] of Object.entries(results.revocation))
    add(
      `revocation → first 403 p99 < 100 ms (${engine})`,
      rev.p99_ms,
      TARGETS.revocation_p99_ms_max,
      rev.p99_ms < TARGETS.revocation_p99_ms_max,
      'ms',
    );
  for (const engine of ENGINES) {
    for (const when of ['ready', 'after_load']) {
      const m = results.memory[`gateway-${engine}-large_${when}`];
      if (m)
        add(
          `gateway RSS < 400 MiB with ${m.keys} keys (${engine}, ${when === 'ready' ? 'ready' : 'after the comparison runs'})`,
          m.rss_mib,
          TARGETS.rss_1m_mib_max,
          m.rss_mib < TARGETS.rss_1m_mib_max,
          'MiB',
        );
    }
    const l = results.large[engine];
    if (l)
      add(
        `no req/s loss with the large key set, ≥ 0.95× the 10-key gateway (${engine}; two processes, see the spread)`,
        l.ratio_req_per_s,
        TARGETS.req_per_s_1m_vs_10_min,
        l.ratio_req_per_s >= TARGETS.req_per_s_1m_vs_10_min,
        '×',
      );
  }
  results.targets = t;
  report(results);
}

/** The closing report: a note on runs that shared the machine, the targets, snapshot loads and memory. */
function report(results) {
  const t = results.targets;
  const noisy = results.runs.filter((x) => (x.machine?.foreign_cpu_pct ?? 0) > FOREIGN_WARN_PCT);
  if (noisy.length > 0) {
    const worst = Math.max(...noisy.map((x) => x.machine.foreign_cpu_pct));
    results.notes.push(
      `${noisy.length} of ${results.runs.length} runs shared the machine with other processes (up to ${worst}% of all CPU time); req/s and latency of those runs are not reliable, CPU µs/req is`,
    );
    log(`\n! ${results.notes.at(-1)}`);
  }
  log('\ntargets');
  for (const x of t)
    log(
      `  ${x.met ? 'met   ' : 'MISSED'}  ${x.name}: ${fmt(x.value, x.unit === '×' ? 3 : 1)}${x.unit === '×' ? '×' : x.unit ? ` ${x.unit}` : ''}`,
    );
  log('\nsnapshot loads');
  for (const l of results.snapshot_loads)
    log(
      `  ${l.gateway.padEnd(26)} ${String(l.keys).padStart(8)} keys: spawn → enforcing ${l.spawn_to_ready_ms} ms, listening → applied ${l.listening_to_applied_ms ?? '—'} ms, control streamed it in ${l.control_snapshot_send_ms ?? '—'} ms; CPU: gateway ${l.gateway_cpu_ms} ms, control ${l.control_cpu_ms} ms`,
    );
  log('gateway memory');
  for (const [k, m] of Object.entries(results.memory))
    log(`  ${k.padEnd(36)} ${String(m.keys).padStart(8)} keys: RSS ${m.rss_mib} MiB, peak ${m.hwm_mib} MiB`);
}

module.exports = { evaluate };
