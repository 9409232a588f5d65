// Outcome classification (docs/design.md §6) as a table.
import t from 'tap';
import { classify, type CallFacts, type ResponseCheck } from '../../gateway/request/classify';
import type { Outcome } from '../../protocol/outcome';

const SLA = 1000;
const facts = (status: number | null, latencyMs: number, networkError: CallFacts['networkError'] = null): CallFacts => ({
  status,
  latencyMs,
  slaMs: SLA,
  networkError,
});

const TABLE: [CallFacts, Outcome][] = [
  [facts(200, 10), 'ok'],
  [facts(201, SLA), 'ok'],
  [facts(204, 0), 'ok'],
  [facts(299, 999), 'ok'],
  [facts(200, SLA + 1), 'latency_breach'],
  [facts(200, 60_000), 'latency_breach'],
  [facts(101, 10), 'ok'],
  [facts(301, 10), 'ok'],
  [facts(304, SLA), 'ok'],
  [facts(302, SLA + 1), 'latency_breach'],
  [facts(500, 10), 'server_error'],
  [facts(502, 10), 'server_error'],
  [facts(503, SLA + 5000), 'server_error'],
  [facts(599, 10), 'server_error'],
  [facts(600, 10), 'server_error'],
  [facts(400, 10), 'client_error'],
  [facts(404, SLA + 1), 'client_error'],
  [facts(429, 10), 'client_error'],
  [facts(499, 10), 'client_error'],
  [facts(null, 10, 'refused'), 'network_error'],
  [facts(null, 10, 'reset'), 'network_error'],
  [facts(null, SLA * 30, 'timeout'), 'network_error'],
  [facts(200, 10, 'reset'), 'network_error'],
  [facts(200, 10, 'timeout'), 'network_error'],
  [facts(null, 10), 'network_error'],
];

t.test('the docs/design.md §6 table', async (t) => {
  for (const [input, expected] of TABLE) {
    t.equal(classify(input), expected, JSON.stringify(input));
  }
});

t.test('response checks run only for answers that passed status and latency', async (t) => {
  const calls: CallFacts[] = [];
  const schema: ResponseCheck = (f) => {
    calls.push(f);
    return 'schema_mismatch';
  };
  t.equal(classify(facts(200, 10), [schema]), 'schema_mismatch');
  t.equal(classify(facts(200, SLA + 1), [schema]), 'latency_breach');
  t.equal(classify(facts(500, 10), [schema]), 'server_error');
  t.equal(classify(facts(404, 10), [schema]), 'client_error');
  t.equal(classify(facts(null, 10, 'reset'), [schema]), 'network_error');
  t.equal(calls.length, 1);
  const pass: ResponseCheck = () => undefined;
  t.equal(classify(facts(200, 10), [pass, schema]), 'schema_mismatch', 'first verdict wins');
  t.equal(classify(facts(200, 10), [pass]), 'ok');
});
