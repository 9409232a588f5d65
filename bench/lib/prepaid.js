'use strict';
/**
 * What prepaid admission costs the gateway (docs/money.md, "Prepaid endpoints"): each engine's
 * gateway `a` loaded, in interleaved rounds, on a postpaid endpoint and on a prepaid one with
 * the same premium, the load key's account funded far past what the run spends. Both answer
 * 200 to every call; the prepaid one also spends each premium from the gateway's budget and
 * writes it into the call's record. Judged: gateway CPU µs per request, prepaid over postpaid,
 * paired by round, within `TARGETS.prepaid_cpu_vs_postpaid_max` on each engine.
 */
const { ENGINES, params, log } = require('./run-params');
const { summarise, printSummary } = require('./rounds');
const { expectStatus } = require('./gateway-runs');

/** The two endpoints' premium (micro-units); far more is deposited than the run can spend. */
const PREMIUM = 100;
const DEPOSIT = 1e15;

async function prepaidPhase(results, { phase }, { admin, gateways, auth, control, loadKeyId }, { upstream, upstreamBase }) {
  const terms = { upstream: upstreamBase, timeout_ms: 30_000, sla_ms: 5_000, premium: PREMIUM };
  await admin.call('POST', '/_admin/v1/endpoints', { id: 'bench-postpaid', ...terms });
  await admin.call('POST', '/_admin/v1/endpoints', { id: 'bench-prepaid', ...terms, billing: 'prepaid' });
  const key = await admin.call('GET', `/_admin/v1/keys/${loadKeyId}`);
  const deposit = await admin.call('POST', `/_admin/v1/accounts/${key.account_id}/deposit`, { amount: DEPOSIT, reference: 'bench' });
  await admin.call('POST', '/_admin/v1/sync/wait', { version: deposit.version, timeout_ms: 30_000 });
  const targets = [];
  for (const g of gateways.filter((x) => x.proc === 'a')) {
    for (const billing of ['postpaid', 'prepaid']) {
      const url = `${g.gw.url}/v1/bench-${billing}/echo`;
      await expectStatus(`${g.name} ${billing}`, url, auth, 200);
      // Named as its group: the paired ratios match a run with its baseline's by name and round.
      targets.push({
        name: `${billing}-${g.engine}`,
        group: `${billing}-${g.engine}`,
        url,
        headers: auth,
        pids: { server: g.gw.proc.pid, upstream: upstream.pid, control: control.pid },
      });
    }
  }
  log(
    `\nprepaid phase: ${params.connections} connections, each engine's gateway on a postpaid and a prepaid endpoint (premium ${PREMIUM})`,
  );
  await phase('prepaid', targets, { rounds: params.rounds, seconds: params.duration_s });
  // Each engine's prepaid runs against its own postpaid runs (the cross-engine ratios are dropped).
  const summary = summarise(
    results.runs,
    'prepaid',
    targets,
    ENGINES.map((e) => `postpaid-${e}`),
  );
  summary.ratios = Object.fromEntries(ENGINES.map((e) => [`prepaid-${e}`, summary.ratios[`prepaid-${e}/postpaid-${e}`]]));
  results.phases.prepaid = { connections: params.connections, premium: PREMIUM, ...summary };
  printSummary(log, 'medians across rounds: prepaid vs postpaid endpoint, same premium, same gateway', results.phases.prepaid);
}

module.exports = { prepaidPhase };
