/**
 * `npm run demo` in its fast mode (no pacing pauses): the whole story against real processes
 * (`svcctl up --json`, a flaky upstream, an agent on svc-monitor-sdk, the settler) must exit 0,
 * which it does only when the refunds, premiums and pool add up against the ledger and
 * `svcctl ledger verify`; the totals it prints are checked here too.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { childEnv } from '../fixtures/stack';

const DEMO = resolve(__dirname, '..', '..', 'dist', 'demo', 'index.js');

t.test('npm run demo (fast) exits 0 and prints totals that add up', async (t) => {
  t.ok(existsSync(DEMO), 'the demo is built (npm run build)');
  const before = new Set(readdirSync(tmpdir()).filter((n) => n.startsWith('svc-demo-')));
  const child = spawn(process.execPath, [DEMO, '--fast'], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  t.equal(code, 0, `the demo passed (stderr: ${stderr.slice(-2000)})`);

  const totals = /^TOTALS (.*)$/m.exec(stdout)?.[1];
  t.ok(totals, 'a TOTALS line');
  const n = Object.fromEntries((totals ?? '').split(' ').map((kv) => kv.split('='))) as Record<string, string>;
  const price = 2000;
  const premium = 100;
  t.equal(Number(n.calls), 20);
  t.equal(Number(n.ok) + Number(n.refunded), 20, 'every call is ok or refunded');
  t.equal(Number(n.refunded), 5, 'five scripted failures: 500, reset, slow, schema break, 500');
  t.equal(Number(n.refunds), Number(n.refunded) * (price + premium));
  t.equal(Number(n.premiums), Number(n.ok) * premium);
  const deposit = 20 * premium;
  t.equal(Number(n.agent_balance), deposit + Number(n.refunds) - Number(n.premiums), 'the deposit, plus refunds, less premiums');
  t.equal(Number(n.pool_after), Number(n.pool_before) + Number(n.premiums) - Number(n.refunds), 'no treasury fee on the demo endpoint');
  t.equal(n.tier, 'HIGH_RISK', '25 % failures over the minimum calls is HIGH_RISK');
  t.equal(Number(n.verified), Number(n.refunded), 'the agent verified every refund from its inclusion proof and the signed receipt');
  t.equal(Number(n.account_calls), 20, "the agent's account counts its twenty calls");
  t.equal(Number(n.account_refunds), Number(n.refunds), "the agent's account shows the refunds the ledger paid");
  t.equal(Number(n.account_premiums), Number(n.premiums), "the agent's account shows the premiums the ledger took");
  t.match(stdout, /the agent's own account \(its key, \/api\/v1\/account, last 24 h\): 20 calls/);
  for (const step of [
    'svc_auth_not_in_beta',
    '402 svc_payment_required',
    'deposited 0.002',
    'latency_breach',
    'network_error',
    'schema_mismatch',
    'svcctl ledger verify',
    'demo passed',
  ])
    t.match(stdout, step);
  const after = readdirSync(tmpdir()).filter((name) => name.startsWith('svc-demo-') && !before.has(name));
  t.same(after, [], 'the demo removed its temporary data dir');
});
