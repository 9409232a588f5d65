/**
 * `npm run demo`: the product's story in under a minute, on embedded defaults, in a temporary
 * data dir that is removed afterwards.
 *
 * An operator starts svc (`svcctl up --json`), registers a flaky weather API with a price and
 * a premium, prepaid, funds the coverage pool and opens the beta gate. A keyless call is
 * refused; a key is issued, and its first call is refused too (402: its account holds nothing)
 * until the operator deposits into its account. An agent written with `svc-monitor-sdk` makes twenty calls; the upstream fails
 * some of them on purpose (a 500, a reset, an answer slower than the SLA, a body that breaks
 * the endpoint's schema, another 500). The settler runs; the demo prints what the agent got
 * back, the pool before and after, the provider's tier and failure rate, the indexer's stats
 * and the agent's own account, all read through the SDK and svcctl, and exits 0 only if the money adds up against
 * the ledger and `svcctl ledger verify`.
 *
 * `--fast` (or `SVC_DEMO_FAST=1`) drops the pauses that pace the story for a reader.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { SvcClient, SvcError } from 'svc-monitor-sdk';
import { CodedError } from '../protocol/coded-error';
import { CONTROL_ON_FREE_PORTS } from '../protocol/runtime';

const CLI = resolve(__dirname, '..', 'cli', 'index.js');
const FAST = process.argv.includes('--fast') || process.env.SVC_DEMO_FAST === '1';

/** The endpoint's economics, micro-units (6 decimals). */
const PRICE = 2_000;
const PREMIUM = 100;
const SLA_MS = 300;
const POOL_FUNDING = '5.0'; // units (a whole number would be micro-units)
const CALLS = 20;
/** What the operator deposits into the agent's account: a premium for every call. */
const DEPOSIT = CALLS * PREMIUM;
const SCHEMA = { type: 'object', required: ['temp_c'], properties: { temp_c: { type: 'number' } } };

/** What the demo upstream does with each call, by its order; anything not listed answers well. */
type Behaviour = 'ok' | 'server_error' | 'reset' | 'slow' | 'schema_break';
const SCRIPT: Readonly<Record<number, Behaviour>> = { 4: 'server_error', 8: 'reset', 11: 'slow', 15: 'schema_break', 17: 'server_error' };
/** The outcome each behaviour must settle as (docs/design.md §6). */
const EXPECTED: Readonly<Record<Behaviour, string>> = {
  ok: 'ok',
  server_error: 'server_error',
  reset: 'network_error',
  slow: 'latency_breach',
  schema_break: 'schema_mismatch',
};
const COVERED = new Set(['latency_breach', 'server_error', 'network_error', 'schema_mismatch']);

const pause = (ms: number): Promise<void> => (FAST ? Promise.resolve() : new Promise((r) => setTimeout(r, ms)));
const units = (micro: number): string => (micro / 1e6).toFixed(6).replace(/\.?0+$/, '') || '0';
const say = (line = ''): void => void process.stdout.write(`${line}\n`);

class DemoFailure extends CodedError {
  override readonly code = 'SVC_ERR_DEMO';
}
function check(condition: boolean, what: string): void {
  if (!condition) throw new DemoFailure(what);
  say(`  ✓ ${what}`);
}

/** The flaky weather API: answers by call order, as SCRIPT says. */
async function startUpstream(): Promise<{ url: string; close: () => Promise<void> }> {
  let n = 0;
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const behaviour = SCRIPT[n++] ?? 'ok';
    req.resume();
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        const text = JSON.stringify(body);
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      if (behaviour === 'server_error') return send(500, { error: 'forecast backend down' });
      if (behaviour === 'reset') return void req.socket.destroy();
      if (behaviour === 'schema_break') return send(200, { temp_c: 'warm-ish' });
      const answer = () => send(200, { city: 'Lisbon', temp_c: 17 + (n % 5), wind_kmh: 12 });
      if (behaviour === 'slow') setTimeout(answer, SLA_MS + 200);
      else answer();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** `svcctl --data-dir D …`; resolves stdout, rejects on a non-zero exit. */
function svcctl(dataDir: string, args: string[]): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(process.execPath, [CLI, '--data-dir', dataDir, ...args], { env: cleanEnv() }, (err, stdout, stderr) => {
      if (err) reject(new DemoFailure(`svcctl ${args.join(' ')} failed: ${stderr.trim() || err.message}`));
      else resolvePromise(stdout);
    });
  });
}
const svcctlJson = async <T>(dataDir: string, args: string[]): Promise<T> => JSON.parse(await svcctl(dataDir, [...args, '--json'])) as T;

function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_')) env[k] = v;
  return env;
}

/** `svcctl up --json` on free ports; resolves once it printed its ready object. */
function startSvc(dataDir: string): Promise<{ child: ChildProcess; urls: Record<string, string> }> {
  const child = spawn(process.execPath, [CLI, 'up', '--json', '--data-dir', dataDir, ...CONTROL_ON_FREE_PORTS, '--gateway-port', '0'], {
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return new Promise((resolvePromise, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once('line', (line) => {
      try {
        resolvePromise({ child, urls: (JSON.parse(line) as { urls: Record<string, string> }).urls });
      } catch {
        reject(new DemoFailure(`svcctl up printed ${line}`));
      }
    });
    child.once('exit', (code) => reject(new DemoFailure(`svcctl up exited (${code}) before it was ready: ${stderr.trim()}`)));
  });
}

function stopSvc(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(kill);
      r();
    });
    child.kill('SIGTERM');
  });
}

async function waitUntil<T>(what: string, probe: () => Promise<T | null>, limitMs = 20_000): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value !== null) return value;
    if (Date.now() > end) throw new DemoFailure(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface PoolView {
  pool: number;
  premiums: number;
  treasury_fees: number;
  refunds: number;
}

type Urls = Awaited<ReturnType<typeof startSvc>>['urls'];
type Seen = { outcome: string; status: number; callId: string | null }[];
/** What the settlement must show, from what the upstream was told to do. */
interface Expected {
  expected: string[];
  covered: number;
  okCalls: number;
  wantRefunds: number;
  wantPremiums: number;
}

/** Steps 1–4, the operator: the endpoint, the funded pool, the gate on, the settler paused. The pool before. */
async function operatorSetUp(dataDir: string, upstreamUrl: string): Promise<PoolView> {
  const schemaFile = join(dataDir, 'forecast.schema.json');
  writeFileSync(schemaFile, JSON.stringify(SCHEMA));
  await svcctl(dataDir, [
    'endpoints',
    'add',
    'weather',
    '--upstream',
    `${upstreamUrl}/v2`,
    '--price',
    String(PRICE),
    '--premium',
    String(PREMIUM),
    '--sla-ms',
    String(SLA_MS),
    '--timeout-ms',
    '2000',
    '--treasury-fee-bps',
    '0',
    '--response-schema',
    schemaFile,
    '--billing',
    'prepaid',
  ]);
  say(
    `2. operator: endpoint "weather" → a flaky upstream; price ${units(PRICE)}, premium ${units(PREMIUM)} prepaid, SLA ${SLA_MS} ms, response schema on`,
  );
  await svcctl(dataDir, ['pool', 'fund', POOL_FUNDING]);
  const poolBefore = await svcctlJson<PoolView>(dataDir, ['pool', 'show']);
  say(`3. operator: coverage pool funded with ${units(poolBefore.pool)}`);
  await svcctl(dataDir, ['flag', 'set', 'beta_gate_enabled', 'on', '--note', 'demo: private beta opens', '--wait']);
  // The settler would settle on its own cadence mid-story; paused, it settles at step 8.
  await svcctl(dataDir, ['settler', 'pause']);
  say('4. operator: beta gate on; settler paused until step 8');
  await pause(400);
  return poolBefore;
}

/** Steps 5–6: a keyless call refused by the gate, then the agent's key issued and applied on the gateway. */
async function admitAgent(dataDir: string, urls: Urls): Promise<{ id: string; key: string; version: number; account_id: string }> {
  const stranger = new SvcClient({ gatewayUrl: urls.gateway!, apiUrl: urls.api!, indexerUrl: urls.indexer! });
  try {
    await stranger.call('weather', 'forecast', { body: { city: 'Lisbon' } });
    throw new DemoFailure('a keyless call was let through with the gate on');
  } catch (err) {
    if (!(err instanceof SvcError)) throw err;
    say(`5. a call without a key: ${err.status} ${err.code}`);
    check(err.code === 'svc_auth_not_in_beta', 'the gate refuses callers without a beta key');
  }

  const issued = await svcctlJson<{ id: string; key: string; version: number; account_id: string }>(dataDir, [
    'keys',
    'issue',
    '--name',
    'demo agent',
    '--limit',
    '600/min',
  ]);
  await waitUntil('the key to reach the gateway', async () => {
    const { gateways } = await svcctlJson<{ gateways: { applied_version: number }[] }>(dataDir, ['status']);
    return gateways.length > 0 && gateways.every((g) => g.applied_version >= issued.version) ? true : null;
  });
  say(`6. operator: key ${issued.id} issued (the plaintext is shown once, to the agent only)`);
  await pause(400);
  return issued;
}

/**
 * Step 6, on: the endpoint is prepaid and the key's account holds nothing, so the agent's first
 * call is refused (402, nothing forwarded, nothing recorded) until the operator deposits into the
 * account; `--wait` returns once the gateway knows.
 */
async function fundAgent(dataDir: string, agent: SvcClient, accountId: string): Promise<void> {
  const err = await agent.call('weather', 'forecast', { body: { city: 'Lisbon' } }).then(
    () => new DemoFailure('a call on a prepaid endpoint was let through with nothing in the account'),
    (e: unknown) => e,
  );
  if (!(err instanceof SvcError)) throw err;
  say(
    `   the agent's first call: ${err.status} ${err.code} (needs ${units(err.required ?? 0)}, its gateway holds ${units(err.available ?? 0)})`,
  );
  check(err.code === 'svc_payment_required' && err.accountId === accountId, 'a prepaid call needs money in the account');
  await svcctl(dataDir, ['accounts', 'deposit', accountId, String(DEPOSIT), '--reference', 'demo-deposit', '--wait']);
  say(`   operator: deposited ${units(DEPOSIT)} into ${accountId} (the gateway holds part of it as the agent's budget)\n`);
  await pause(400);
}

/** Step 7: the agent's calls through the SDK, each line as it comes. */
async function agentCalls(agent: SvcClient): Promise<Seen> {
  say(`7. the agent calls POST /v1/weather/forecast ${CALLS} times through svc-monitor-sdk:`);
  const seen: { outcome: string; status: number; callId: string | null }[] = [];
  for (let i = 0; i < CALLS; i++) {
    let status: number;
    let outcome: string;
    let line: string;
    let callId: string | null;
    try {
      const r = await agent.call('weather', 'forecast', { body: { city: 'Lisbon', n: i } });
      status = r.status;
      outcome = r.outcome ?? 'unknown';
      callId = r.callId;
      line = `refund ${units(r.refund ?? 0).padEnd(8)} premium ${units(r.premium ?? 0).padEnd(8)} ${String(r.latencyMs ?? '-').padStart(4)} ms`;
    } catch (err) {
      if (!(err instanceof SvcError)) throw err;
      status = err.status;
      callId = err.callId;
      // The gateway's own 502/504 carry the same x-svc-* headers as an upstream answer.
      outcome = err.headers['x-svc-outcome'] ?? 'unknown';
      line = `${err.code.padEnd(26)} refund ${units(Number(err.headers['x-svc-refund'] ?? 0))}`;
    }
    seen.push({ outcome, status, callId });
    say(`   #${String(i + 1).padStart(2, '0')}  ${status}  ${outcome.padEnd(15)} ${line}`);
    await pause(120);
  }
  say(
    '   (the head of #16 said ok: its body broke the schema, which svc checks as the body streams; the settlement below has the final verdict)',
  );
  say();
  return seen;
}

/** Step 8: each call's head-time outcome is the one its script earns, and the settler settles them all. */
async function settle(dataDir: string, seen: Seen): Promise<Expected> {
  const expected = Array.from({ length: CALLS }, (_, i) => EXPECTED[SCRIPT[i] ?? 'ok']);
  for (let i = 0; i < CALLS; i++) {
    const head = expected[i] === 'schema_mismatch' ? 'ok' : expected[i];
    if (seen[i]!.outcome !== head) throw new DemoFailure(`call #${i + 1}: the gateway said ${seen[i]!.outcome}, expected ${head}`);
  }
  const covered = expected.filter((o) => COVERED.has(o)).length;
  const okCalls = expected.filter((o) => o === 'ok').length;
  const wantRefunds = covered * (PRICE + PREMIUM);
  const wantPremiums = okCalls * PREMIUM;

  await waitUntil('every call to reach control', async () => {
    const s = await svcctlJson<{ backlog: number }>(dataDir, ['settler', 'status']);
    return s.backlog >= CALLS ? s : null;
  });
  const run = await svcctlJson<{ calls: number; batches: unknown[] }>(dataDir, ['settler', 'run-once']);
  say(`8. operator: settler run-once settled ${run.calls} calls in ${run.batches.length} batch(es)`);
  return { expected, covered, okCalls, wantRefunds, wantPremiums };
}

/** Step 9: what the agent got back, from the ledger, the public API and the indexer. */
async function whatTheAgentGot(dataDir: string, agent: SvcClient, accountId: string, poolBefore: PoolView, { covered, okCalls }: Expected) {
  const poolAfter = await svcctlJson<PoolView>(dataDir, ['pool', 'show']);
  const balances = new Map(
    (await svcctlJson<{ balances: { account: string; balance: number }[] }>(dataDir, ['ledger', 'balances'])).balances.map((b) => [
      b.account,
      b.balance,
    ]),
  );
  // The key's account holds its money (an account of its own: the key was issued without one).
  const agentBalance = balances.get(`account:${accountId}`) ?? 0;
  say();
  say('9. what the agent got back');
  say(`   refunds received   ${units(poolAfter.refunds)}  (${covered} failed calls × (price ${units(PRICE)} + premium ${units(PREMIUM)}))`);
  say(`   premiums paid      ${units(poolAfter.premiums)}  (${okCalls} good calls × ${units(PREMIUM)})`);
  say(`   agent's balance    ${units(agentBalance)}  (its deposit, plus refunds, less premiums)`);
  say(`   pool before/after  ${units(poolBefore.pool)} → ${units(poolAfter.pool)}`);

  const providers = await agent.providers();
  const provider = providers.providers[0]!;
  say(
    `   provider ${provider.id}: tier ${provider.tier}, failure rate ${(provider.failure_rate * 100).toFixed(1)} % over ${provider.calls} calls`,
  );
  const stats = await agent.stats();
  say(
    `   indexer: pool ${units(stats.pool_size)}, ${stats.settled_batches} settled batch(es), ${stats.settled_calls} settled calls, total refunds ${units(stats.total_refunds)}`,
  );
  say('   last settled calls (opaque ids, as the public sees them):');
  for await (const page of agent.activity({ limit: 6 })) {
    for (const item of page.activity) say(`     ${item.call_id}  ${item.outcome.padEnd(15)} refund ${units(item.refund ?? 0)}`);
    break; // the newest page is enough here
  }
  say();
  return { poolAfter, agentBalance, provider, stats };
}

/** Step 10: the agent verifies each refund offline; how many were verified with the outcome earned. */
async function verifyRefunds(agent: SvcClient, { expected }: Expected, seen: Seen): Promise<number> {
  say("10. the agent checks each refund itself: the inclusion proof of its call id in the batch's");
  say('    Merkle tree, and the Ed25519 signature of the batch receipt (no trust in the operator)');
  let verified = 0;
  for (const [i, want] of expected.entries()) {
    if (!COVERED.has(want)) continue;
    const callId = seen[i]!.callId;
    if (callId === null) throw new DemoFailure(`call #${i + 1} has no call id`);
    const verdict = await agent.verifyRefund(callId);
    say(
      `     #${String(i + 1).padStart(2, '0')} ${callId}  ${verdict.ok ? 'verified' : 'NOT VERIFIED'}: ${verdict.outcome}, refund ${units(verdict.refund ?? 0)} in batch ${verdict.batch}${verdict.reasons.length ? ` (${verdict.reasons.join('; ')})` : ''}`,
    );
    if (verdict.ok && verdict.outcome === want && verdict.refund === PRICE + PREMIUM) verified++;
  }
  say();
  return verified;
}

/** Step 12: the demo checks its arithmetic against the ledger, the indexer, the account and the public failure rate. */
async function checkArithmetic(
  dataDir: string,
  { covered, okCalls, wantRefunds, wantPremiums }: Expected,
  poolBefore: PoolView,
  got: Awaited<ReturnType<typeof whatTheAgentGot>>,
  verified: number,
  account: Awaited<ReturnType<SvcClient['account']>>,
): Promise<void> {
  const { poolAfter, agentBalance, provider, stats } = got;
  say('12. the demo checks its arithmetic');
  check(verified === covered, `all ${covered} refunds verified offline by the agent, with the outcome the upstream earned`);
  check(poolAfter.refunds === wantRefunds, `refunds paid = ${covered} × ${PRICE + PREMIUM} = ${wantRefunds} micro`);
  check(poolAfter.premiums === wantPremiums, `premiums collected = ${okCalls} × ${PREMIUM} = ${wantPremiums} micro`);
  check(
    agentBalance === DEPOSIT + wantRefunds - wantPremiums,
    `the agent's ledger account = deposit + refunds − premiums = ${DEPOSIT + wantRefunds - wantPremiums} micro`,
  );
  check(
    poolAfter.pool === poolBefore.pool + wantPremiums - poolAfter.treasury_fees - wantRefunds,
    'pool after = pool before + premiums − treasury fees − refunds',
  );
  check(stats.total_refunds === wantRefunds && stats.pool_size === poolAfter.pool, 'the indexer agrees with the ledger');
  check(
    account.calls === CALLS &&
      account.refunds.settled === wantRefunds &&
      account.premiums.settled === wantPremiums &&
      account.unsettled_calls === 0 &&
      account.balance.available === agentBalance &&
      account.balance.reserved === 0,
    "the agent's account agrees with the ledger (its balance too: nothing reserved once every call settled)",
  );
  check(
    provider.failures === covered && provider.calls === CALLS,
    `the public failure rate counts ${covered} covered failures in ${CALLS} calls`,
  );
  const verify = await svcctl(dataDir, ['ledger', 'verify']);
  check(/^Ledger OK/.test(verify), '`svcctl ledger verify`: every transfer balances, every balance matches its postings');
  say();
  say(
    `TOTALS calls=${CALLS} ok=${okCalls} refunded=${covered} refunds=${poolAfter.refunds} premiums=${poolAfter.premiums} agent_balance=${agentBalance} pool_before=${poolBefore.pool} pool_after=${poolAfter.pool} tier=${provider.tier} verified=${verified} account_calls=${account.calls} account_refunds=${account.refunds.settled} account_premiums=${account.premiums.settled}`,
  );
}

async function story(dataDir: string): Promise<void> {
  say('svc demo: an agent pays for a flaky weather API, and svc makes the API accountable');
  say();
  const upstream = await startUpstream();
  const { child, urls } = await startSvc(dataDir);
  try {
    say(`1. svc is up: gateway ${urls.gateway}, public api ${urls.api}, indexer ${urls.indexer}`);
    const poolBefore = await operatorSetUp(dataDir, upstream.url);
    const issued = await admitAgent(dataDir, urls);
    const agent = new SvcClient({ gatewayUrl: urls.gateway!, apiUrl: urls.api!, indexerUrl: urls.indexer!, key: issued.key });
    await fundAgent(dataDir, agent, issued.account_id);
    const seen = await agentCalls(agent);
    const expected = await settle(dataDir, seen);
    const got = await whatTheAgentGot(dataDir, agent, issued.account_id, poolBefore, expected);
    const verified = await verifyRefunds(agent, expected, seen);
    const account = await agent.account();
    say(
      `11. the agent's own account (its key, /api/v1/account, last 24 h): ${account.calls} calls, refunds ${units(account.refunds.settled)} settled + ${units(account.refunds.pending)} pending, premiums ${units(account.premiums.settled)} settled, ${account.unsettled_calls} unsettled; balance ${units(account.balance.available)} available`,
    );
    say();
    await checkArithmetic(dataDir, expected, poolBefore, got, verified, account);
  } finally {
    await stopSvc(child);
    await upstream.close();
  }
}

async function main(): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-demo-'));
  const started = Date.now();
  try {
    await story(dataDir);
    say(`demo passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return 0;
  } catch (err) {
    process.stderr.write(`demo FAILED: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main().then((code) => process.exit(code));
