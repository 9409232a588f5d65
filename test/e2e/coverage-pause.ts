/**
 * The pool pauses itself when its free capital is spent (docs/money.md, "Pause"), with real
 * gateway processes (two, one per engine) on a control evaluating coverage every 200 ms, on
 * both stores. The pool holds 21 calls' worth of refunds (an odd number: one gateway is given
 * the call that does not divide); one endpoint (price 1000, premium 100) whose upstream fails
 * every call is hammered with keyed calls, several in flight, through both gateways, until
 * control has paused coverage and both gateways say so, then some more.
 *
 * Every call is forwarded; exactly 21 are answered `X-Svc-Coverage: covered` (refund 1100), the
 * others `none` (refund 0), and every call after the pause `none`. Settled, each covered failure
 * is refunded in full (no clamp, no shortfall) and each uncovered one moves nothing; the pool's
 * capital never falls below what is locked, `/api/stats` never shows negative free capital,
 * and the ledger verifies. The automatic pause is audited and published once in the changelog;
 * a deposit resumes coverage by itself within a few evaluations (new calls are covered again),
 * with a resume notice. However far shipping and ingest lag behind (a loaded machine), no
 * gateway covers a failure the free capital of its lines does not hold: each failure counts
 * until a line evaluated after its ingest arrives.
 */
import t, { type Test } from 'tap';
import { POOL_AUTO_PAUSED_META } from '../../control/pool';
import { CARRY_MAX_MS } from '../../gateway/state/coverage';
import { runCli } from '../fixtures/cli';
import { startTestControl, type TestControl } from '../fixtures/control';
import { ENGINES } from '../fixtures/engines';
import { get } from '../fixtures/public';
import { GENEROUS_LIMITS, health, request, sleep, startGatewayProcess, waitFor, type ServiceProcess } from '../fixtures/stack';
import { forEachStore } from '../fixtures/stores';
import { startUpstream } from '../fixtures/upstream';

const PRICE = 1_000;
const PREMIUM = 100;
/** What one covered failure is refunded. */
const CALL = PRICE + PREMIUM;
/** The pool: refunds for this many failures. */
const POOL_CALLS = 21;
const GATEWAYS = 2;
/** Calls in flight at once. */
const IN_FLIGHT = 6;
/** Pause between one worker's calls, so the hammer leaves the machine's two cores to the processes. */
const PACE_MS = 5;
/** Calls sent once both gateways say coverage is paused. */
const AFTER_PAUSE = 40;
/** Calls sent at least. */
const MIN_CALLS = 300;
/** Bound on the hammer, should the pause never come. */
const MAX_CALLS = 4_000;
const CHECK_MS = 200;

interface Answer {
  callId: string;
  status: number;
  outcome: string;
  coverage: string;
  premium: number;
  refund: number;
  /** Whether both gateways said coverage was paused before the call was sent. */
  afterPause: boolean;
}

/** The pool's capital as the admin API shows it, checked whenever it is read. */
interface PoolFigures {
  pool: number;
  refunds: number;
  refunds_owed: number;
  shortfall: number;
  clamped: { pool_depleted: number };
  capital: { capital: number; locked: number; free: number; exposure: number };
}

function scenario(t: Test, control: TestControl, gateways: ServiceProcess[]): Promise<void> {
  return (async () => {
    const admin = control.admin.bind(control);
    const store = control.handle.ctx.store;
    const poolReads: PoolFigures[] = [];
    const pool = async (): Promise<PoolFigures> => {
      const figures = (await admin<PoolFigures>('GET', '/_admin/v1/pool')).body;
      poolReads.push(figures);
      return figures;
    };
    const changelog = async (): Promise<string[]> =>
      ((await get(control, control.urls.api, '/api/v1/changelog')).body.entries as { text: string }[]).map((e) => e.text);
    const coverageOf = async (gw: ServiceProcess) =>
      (await health(gw.url)).body?.coverage as { covered: boolean; allowance: number; held: number } | null;

    const up = await startUpstream(t);
    up.on('/base/*', { kind: 'json', status: 500, body: { error: 'down' } });
    // The pool first: an endpoint before it would pause coverage at once.
    t.equal((await admin('POST', '/_admin/v1/pool/fund', { amount: POOL_CALLS * CALL })).status, 201);
    const endpoint = await admin('POST', '/_admin/v1/endpoints', {
      id: 'ep',
      upstream: `${up.url}/base`,
      price: PRICE,
      premium: PREMIUM,
      sla_ms: 60_000,
      timeout_ms: 60_000,
    });
    t.equal(endpoint.status, 201, endpoint.text);
    const key = await admin('POST', '/_admin/v1/keys', { name: 'agent' });
    t.equal(key.status, 201, key.status === 201 ? 'a key issued' : key.text);
    const version = key.body.version as number;
    // Both live: the 21 calls' worth divided 11 to gw-1 (the first by id), 10 to gw-2.
    const shares = [11 * CALL, 10 * CALL];
    await Promise.all(
      gateways.map(async (gw, i) => {
        await waitFor(async () => (await health(gw.url)).body?.snapshot_version >= version, `${gw.url} to apply the setup`);
        await waitFor(async () => (await coverageOf(gw))?.allowance === shares[i], `${gw.url} to hold ${shares[i]} of the free capital`);
      }),
    );
    t.same(await changelog(), [], 'no coverage notice while the pool holds enough');

    // The hammer: keyed calls through both gateways in turn, until both say coverage is paused.
    const auth = { authorization: `Bearer ${key.body.key as string}`, 'content-type': 'application/json' };
    const answers: Answer[] = [];
    let sent = 0;
    let pausedAt: number | null = null;
    let lastCoveredAt = 0;
    let failure: unknown = null;
    const worker = async () => {
      while (failure === null && sent < MAX_CALLS && (pausedAt === null || sent < Math.max(pausedAt + AFTER_PAUSE, MIN_CALLS))) {
        const i = sent++;
        const afterPause = pausedAt !== null;
        const res = await request(gateways[i % GATEWAYS]!.url, '/v1/ep/x', { body: '{}', headers: auth });
        answers.push({
          callId: String(res.headers['x-svc-call-id']),
          status: res.status,
          outcome: String(res.headers['x-svc-outcome']),
          coverage: String(res.headers['x-svc-coverage']),
          premium: Number(res.headers['x-svc-premium']),
          refund: Number(res.headers['x-svc-refund']),
          afterPause,
        });
        if (res.headers['x-svc-coverage'] === 'covered') lastCoveredAt = Date.now();
        await sleep(PACE_MS); // pacing the load generator, not waiting for anything
      }
    };
    const watch = async () => {
      while (pausedAt === null && sent < MAX_CALLS && failure === null) {
        await pool();
        if ((await store.meta(POOL_AUTO_PAUSED_META)) === 1) {
          const said = await Promise.all(gateways.map(coverageOf));
          if (said.every((c) => c?.covered === false && c.allowance === 0)) pausedAt = sent;
        }
        await sleep(50); // polling interval of the watcher
      }
    };
    const started = Date.now();
    await Promise.all([...Array.from({ length: IN_FLIGHT }, worker), watch()]).catch((err: unknown) => (failure = err));
    if (failure !== null) throw failure as Error;
    t.comment(`${answers.length} calls in ${Date.now() - started} ms; paused after ${pausedAt ?? 'never'}`);
    t.not(pausedAt, null, 'coverage paused itself');

    t.equal(up.requests.length, answers.length, 'every call reached the upstream');
    t.ok(
      answers.every((a) => a.status === 500 && a.outcome === 'server_error'),
      'every call was forwarded and answered by the upstream',
    );
    const covered = answers.filter((a) => a.coverage === 'covered');
    const uncovered = answers.filter((a) => a.coverage === 'none');
    t.equal(covered.length, POOL_CALLS, `exactly the ${POOL_CALLS} failures the pool holds were covered`);
    t.equal(uncovered.length, answers.length - POOL_CALLS, 'every other call was admitted uncovered');
    t.ok(
      covered.every((a) => a.refund === CALL && a.premium === 0),
      'covered failures: refund price + premium',
    );
    t.ok(
      uncovered.every((a) => a.refund === 0 && a.premium === 0),
      'uncovered: refund 0, premium 0',
    );
    const late = answers.filter((a) => a.afterPause);
    t.ok(late.length >= AFTER_PAUSE - IN_FLIGHT, `${late.length} calls sent after the pause`);
    t.ok(
      late.every((a) => a.coverage === 'none'),
      'every call after the pause is uncovered',
    );

    // Everything shipped and settled.
    await Promise.all(gateways.map((gw) => waitFor(async () => (await health(gw.url)).body?.journal_backlog === 0, `${gw.url} drained`)));
    await waitFor(async () => (await store.outcomes.count()) === answers.length, 'control to hold every call');
    const run = await admin('POST', '/_admin/v1/settler/run-once');
    t.equal(run.status, 200, run.text);
    t.equal((await admin('GET', '/_admin/v1/settler')).body.backlog, 0, 'nothing left to settle');
    const wrong: string[] = [];
    for (const a of answers) {
      const row = (await store.outcomes.byCallId(a.callId)) as {
        premium: number;
        refund: number;
        refund_owed: number;
        clamp: string | null;
      };
      const owed = a.coverage === 'covered' ? CALL : 0;
      if (row?.refund !== owed || row.refund_owed !== owed || row.premium !== 0 || row.clamp !== null)
        wrong.push(`${a.callId} (${a.coverage}): ${JSON.stringify(row)}`);
    }
    t.same(wrong, [], 'covered failures settled with their full refund, uncovered ones with nothing');
    const settled = await pool();
    t.match(
      settled,
      { pool: 0, refunds: POOL_CALLS * CALL, refunds_owed: POOL_CALLS * CALL, shortfall: 0, clamped: { pool_depleted: 0 } },
      'the pool paid exactly its capital, clamping nothing',
    );
    t.match(settled.capital, { capital: 0, locked: 0, free: 0, exposure: 0 });

    // The public figures and the notice.
    const stats = (await get(control, control.urls.indexer, '/api/stats')).body;
    t.match(stats?.pool, { capital: 0, locked: 0, free: 0, paused: true }, '/api/stats shows the pool spent, not overdrawn, and paused');
    t.ok(stats?.uncovered_calls > 0, `/api/stats counts the uncovered calls (${stats?.uncovered_calls})`);
    const paused = await waitFor(async () => {
      const texts = await changelog();
      return texts.length > 0 ? texts : null;
    }, 'the pause notice');
    t.equal(paused.length, 1, 'one notice');
    t.match(paused[0], /^Coverage paused automatically: the pool's free capital \(0\) is below its minimum \(1100\)/);
    const auditOf = async (action: string) => (await admin('GET', `/_admin/v1/audit?action=${action}`)).body.entries as unknown[];
    t.match(await auditOf('pool.auto_pause'), [{ actor: 'coverage', target: 'pool', detail: { free: 0, min_free: CALL } }]);
    t.equal((await auditOf('pool.auto_pause')).length, 1, 'audited once');

    // A deposit: coverage resumes by itself, and new calls are covered again.
    const deposit = 10 * CALL;
    t.equal((await admin('POST', '/_admin/v1/pool/fund', { amount: deposit })).status, 201);
    const fundedAt = Date.now();
    await Promise.all(
      gateways.map((gw) =>
        waitFor(
          async () => (await coverageOf(gw))?.allowance === deposit / GATEWAYS,
          `${gw.url} to cover again`,
          // A few evaluations, with room for a loaded machine.
          20 * CHECK_MS,
        ),
      ),
    );
    t.comment(`each gateway told to cover again ${Date.now() - fundedAt} ms after the deposit`);
    // A gateway counts each failure against its lines until control has provably seen it (its
    // record acked, then a line evaluated after that ingest), then CARRY_MS more than its proofs
    // lately took, for the other gateway: new calls are covered once that is over. The bound is
    // not a latency claim: it leaves room for a loaded machine, whose proofs take longer.
    await Promise.all(
      gateways.map((gw) =>
        waitFor(async () => (await coverageOf(gw))?.held === 0, `${gw.url}'s last failures to be let go`, CARRY_MAX_MS + 20 * CHECK_MS),
      ),
    );
    t.comment(
      `covering again ${Date.now() - fundedAt} ms after the deposit, ${Date.now() - lastCoveredAt} ms after the last covered failure`,
    );
    const again = await Promise.all(gateways.map((gw) => request(gw.url, '/v1/ep/x', { body: '{}', headers: auth })));
    t.same(
      again.map((a) => [a.headers['x-svc-coverage'], a.headers['x-svc-refund']]),
      again.map(() => ['covered', String(CALL)]),
      'new calls are covered again',
    );
    const resumed = await waitFor(async () => {
      const texts = await changelog();
      return texts.length > 1 ? texts : null;
    }, 'the resume notice');
    t.equal(resumed.length, 2);
    t.match(resumed[0], /^Coverage resumed automatically: the pool's free capital \(11000\)/);
    t.match(await auditOf('pool.auto_resume'), [{ actor: 'coverage', detail: { free: deposit, min_free: CALL } }]);
    t.equal((await auditOf('pool.auto_resume')).length, 1, 'audited once');

    // Settled again: those two refunded in full too; the pool never below what it had locked.
    await Promise.all(gateways.map((gw) => waitFor(async () => (await health(gw.url)).body?.journal_backlog === 0, `${gw.url} drained`)));
    await waitFor(async () => (await store.outcomes.count()) === answers.length + again.length, 'control to hold the last calls');
    t.equal((await admin('POST', '/_admin/v1/settler/run-once')).status, 200);
    t.match(await pool(), { pool: deposit - again.length * CALL, shortfall: 0, clamped: { pool_depleted: 0 } });
    const overdrawn = poolReads.filter((p) => p.pool < 0 || p.capital.free < 0 || p.capital.capital < p.capital.locked);
    t.same(overdrawn, [], `the pool never below what it had locked (${poolReads.length} reads)`);
    const statsAfter = await waitFor(async () => {
      const s = (await get(control, control.urls.indexer, '/api/stats')).body;
      return s?.pool?.capital === deposit - again.length * CALL ? s : null;
    }, '/api/stats to show the second settlement');
    t.ok(statsAfter.pool.free >= 0, '/api/stats pool.free is not negative');
    const verify = await admin('GET', '/_admin/v1/ledger/verify');
    t.equal(verify.body?.ok, true, verify.text);
    const cli = await runCli(['ledger', 'verify'], { control });
    t.equal(cli.code, 0, cli.stdout + cli.stderr);
  })();
}

forEachStore(t, (t, kind) => {
  t.test('the pool pauses itself when its free capital is spent, and resumes after a deposit', async (t) => {
    const control = await startTestControl(t, {
      store: kind,
      coverageCheckMs: CHECK_MS,
      env: GENEROUS_LIMITS,
      flags: { 'settler.cadenceMs': 1_000, 'cache.statsTtlS': 1, 'cache.statusTtlS': 1 },
    });
    const gateways: ServiceProcess[] = [];
    for (let g = 0; g < GATEWAYS; g++) {
      gateways.push(
        await startGatewayProcess(t, {
          dataDir: control.dataDir,
          controlUrl: control.urls.control,
          id: `gw-${g + 1}`,
          env: { SVC_GATEWAY_ENGINE: ENGINES[g % ENGINES.length]! },
        }),
      );
    }
    await scenario(t, control, gateways);
  });
});
