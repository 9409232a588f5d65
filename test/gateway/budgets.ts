// The gateway's prepaid budgets (`gateway/state/budgets.ts`) against a stand-in for control's
// budget API: the shape of each request kind (want with need, ahead of need, poll with held,
// drained), coalescing, the short cache and `accounts_funded` reopening it, ask-back returns
// reported cumulatively, the bounded wait, and spending only what is held while control is down.
import t, { type Test } from 'tap';
import { ControlEndpoints } from '../../gateway/control-link/sync-http';
import { BUDGET_WAIT_MS, Budgets, SHORT_RETRY_MS } from '../../gateway/state/budgets';
import { silentLogger } from '../../runtime/log';
import { SYNC_TOKEN, gate, startBudgetControl, type BudgetControl } from './fixtures/budget-control';
import { waitFor } from './fixtures/harness.cts';

const INSTANCE = 'inst-budgets-test';

interface Options {
  pollMs?: number;
  backlog?: () => number;
  now?: () => number;
}

function budgetsOn(t: Test, control: BudgetControl, opts: Options = {}): Budgets {
  const budgets = new Budgets({
    control: new ControlEndpoints([control.url]),
    syncToken: SYNC_TOKEN,
    gatewayId: 'gw-budgets',
    instance: INSTANCE,
    backlog: opts.backlog ?? (() => 1),
    log: silentLogger,
    pollMs: opts.pollMs ?? 60_000,
    ...(opts.now ? { now: opts.now } : {}),
  });
  t.teardown(() => budgets.stop());
  return budgets;
}

/** A want that must have been made (not refused at once). */
function asked(wait: Promise<void> | null): Promise<void> {
  if (wait === null) throw new Error('the want was refused at once');
  return wait;
}

/** Spend `premium` while it is covered; how many times it was. */
function spendAll(budgets: Budgets, account: string, premium: number): number {
  let n = 0;
  while (budgets.take(account, premium)) n++;
  return n;
}

t.test('a want carries the need; wants of one turn share a request; calls short meanwhile wait on it', async (t) => {
  const control = await startBudgetControl(t, { funds: { acc_a: 10_000, acc_b: 300 } });
  const budgets = budgetsOn(t, control);
  t.equal(budgets.take('acc_a', 500), false, 'nothing held at the start');
  const held = gate(control);
  const waits = [budgets.want('acc_a', 500), budgets.want('acc_a', 700), budgets.want('acc_b', 400)].map(asked);
  await waitFor(() => control.requests.length === 1, 'the request');
  waits.push(asked(budgets.want('acc_a', 500)), asked(budgets.want('acc_b', 400)));
  t.same(control.requests[0], {
    gateway_id: 'gw-budgets',
    instance: INSTANCE,
    want: [
      { account: 'acc_a', need: 700 },
      { account: 'acc_b', need: 400 },
    ],
    held: [],
  });
  held.open();
  await Promise.all(waits);
  t.equal(control.requests.length, 1, 'one request for every call of both accounts');
  t.equal(budgets.available('acc_a'), 700, 'granted the need');
  t.equal(budgets.available('acc_b'), 300, 'granted what was free');
  t.equal(spendAll(budgets, 'acc_a', 700), 1);
  t.equal(control.invalid, 0, 'every request parsed as a BudgetRequest');
});

t.test('an admission leaving less than half a grant step, or two premiums, asks ahead with need 0; nobody waits', async (t) => {
  const control = await startBudgetControl(t, { funds: { acc: 5_000 }, step: 1_000 });
  const budgets = budgetsOn(t, control);
  await budgets.want('acc', 100);
  t.equal(budgets.available('acc'), 1_000, 'a want takes the step');
  t.equal(spendAll(budgets, 'acc', 100), 10, 'ten calls of 100 covered at once');
  await waitFor(() => control.requests.length === 2, 'the ask ahead of need');
  t.same(control.requests[1]!.want, [{ account: 'acc', need: 0 }]);
  // Below half the step (500) after the 6th call: the ask went then, and its answer came while
  // the rest were spent or after.
  await waitFor(() => budgets.available('acc') === 1_000, 'the answer applied: granted 2000 in all, spent 1000');
  t.equal(control.granted(INSTANCE, 'acc'), 2_000, 'a second step');
  t.equal(control.requests.length, 2, 'one ask ahead, not one per call');
});

t.test('a call short while an ask ahead of need is on the wire waits for it, then asks with its need', async (t) => {
  const control = await startBudgetControl(t, { funds: { acc: 10_000 }, step: 100 });
  const budgets = budgetsOn(t, control);
  await asked(budgets.want('acc', 100));
  const held = gate(control);
  t.equal(budgets.take('acc', 100), true, 'spends the step, which asks ahead');
  await waitFor(() => control.requests.length === 2, 'the ask ahead of need on the wire');
  const waiting = asked(budgets.want('acc', 500));
  held.open();
  await waiting;
  t.same(
    control.requests.map((r) => r.want),
    [[{ account: 'acc', need: 100 }], [{ account: 'acc', need: 0 }], [{ account: 'acc', need: 400 }]],
    'the ask ahead got a step of 100; the call then asked for the 400 it still lacked',
  );
  t.equal(budgets.take('acc', 500), true, 'and is covered');
});

t.test('a call short while an ask ahead of need hangs on the wire waits once for it, then gives up', async (t) => {
  const control = await startBudgetControl(t, { funds: { acc: 10_000 }, step: 100 });
  const budgets = budgetsOn(t, control);
  await asked(budgets.want('acc', 100));
  const held = gate(control);
  t.teardown(() => held.open());
  t.equal(budgets.take('acc', 100), true, 'spends the step, which asks ahead');
  await waitFor(() => control.requests.length === 2, 'the ask ahead of need on the wire');
  // Control never answers it: the wait runs out once, and the call is not sent after the same ask again.
  const started = Date.now();
  await asked(budgets.want('acc', 500));
  const waited = Date.now() - started;
  t.ok(waited < 2 * BUDGET_WAIT_MS + 1_000, `waited ${waited} ms: what was left of the ask's wait, once`);
  t.equal(budgets.take('acc', 500), false, 'still short: the call is refused');
});

t.test('an answer that leaves the account short stops its wants for a while, unless it is funded', async (t) => {
  const control = await startBudgetControl(t, { funds: { acc: 200 } });
  let now = 1_000_000;
  const budgets = budgetsOn(t, control, { now: () => now });
  await budgets.want('acc', 500);
  t.equal(budgets.available('acc'), 200, 'granted what was free, short of 500');
  for (let i = 0; i < 5; i++) t.equal(budgets.want('acc', 500), null, 'short: no ask, refused at once');
  t.equal(control.requests.length, 1, 'one request for six short calls');

  now += SHORT_RETRY_MS + 1;
  await budgets.want('acc', 500);
  t.equal(control.requests.length, 2, 'asked again after the short cache');
  t.equal(budgets.want('acc', 500), null, 'still short');

  control.funds.set('acc', 1_000);
  budgets.funded(['acc', 'acc_never_seen']);
  const asked = budgets.want('acc', 500);
  t.not(asked, null, 'funded: asks at once');
  await asked;
  t.equal(budgets.available('acc'), 500, 'covered now');
  t.equal(budgets.take('acc', 500), true);
});

t.test('ask-back: returns what is unspent, up to the ask, and reports it cumulatively on the polls', async (t) => {
  const control = await startBudgetControl(t, { funds: { acc: 5_000 }, step: 5_000 });
  const budgets = budgetsOn(t, control, { pollMs: 20 });
  await budgets.want('acc', 500);
  t.equal(budgets.take('acc', 500), true);
  control.ask.set('acc', 1_000);
  budgets.start();
  await waitFor(() => budgets.available('acc') === 3_500, 'the first ask honoured');
  control.ask.set('acc', 500);
  await waitFor(() => budgets.available('acc') === 3_000, 'the second');
  await waitFor(() => control.returned(INSTANCE, 'acc') === 1_500, 'both reported');
  const reports = control.requests.filter((r) => r.held.length > 0).map((r) => r.held[0]!.returned);
  t.same([...new Set(reports)], [0, 1_000, 1_500], 'returned is cumulative, reported as it grows');
  t.ok(
    control.requests.every((r) => r.held.every((h) => h.account === 'acc')),
    'held names the account with budget',
  );

  control.ask.set('acc', 1_000_000);
  await waitFor(() => budgets.available('acc') === 0, 'an ask over the budget');
  await waitFor(() => control.returned(INSTANCE, 'acc') === 4_500, 'gives back all that was unspent, no more');
  t.equal(budgets.take('acc', 1), false);
  t.same(budgets.summary(), { instance: INSTANCE, accounts: 0, available: 0, drained: false }, 'nothing held');
});

t.test('drained goes once the journal backlog was zero, retried until control took it', async (t) => {
  const control = await startBudgetControl(t, {});
  let backlog = 3;
  let looks = 0;
  const budgets = budgetsOn(t, control, {
    pollMs: 20,
    backlog: () => {
      looks++;
      return backlog;
    },
  });
  budgets.start();
  control.down = true;
  await waitFor(() => looks >= 3, 'three polls');
  t.equal(control.requests.length, 0, 'nothing held, backlog not drained: no poll is sent');
  backlog = 0;
  await waitFor(() => control.requests.length >= 2, 'drained sent and refused, then sent again');
  control.down = false;
  await waitFor(() => budgets.summary().drained, 'control took it');
  const drainedSent = control.requests.length;
  t.ok(
    control.requests.every((r) => r.drained === true && r.held.length === 0 && r.want.length === 0),
    'every request so far carried drained and nothing else',
  );
  // Holding budget makes the polls send again: they say what is held, and drained no more.
  control.funds.set('acc', 100);
  await budgets.want('acc', 100);
  await waitFor(() => control.requests.some((r) => r.held.length > 0), 'a poll with held');
  t.equal(control.requests.filter((r) => r.drained === true).length, drainedSent, 'drained was not sent again');
  t.same(control.requests.at(-1), { gateway_id: 'gw-budgets', instance: INSTANCE, want: [], held: [{ account: 'acc', returned: 0 }] });
});

t.test('control down: the budget held is spent, no more; failures back off; the wait is bounded', async (t) => {
  const control = await startBudgetControl(t, { funds: { acc: 10_000 }, step: 1_000 });
  const budgets = budgetsOn(t, control);
  await budgets.want('acc', 500);
  control.down = true;
  t.equal(spendAll(budgets, 'acc', 300), 3, '1000 held covers three calls of 300');
  await waitFor(() => control.requests.length === 2, 'the ask ahead of need, refused');
  t.equal(budgets.want('acc', 300), null, 'backing off: refused at once, not sent');
  t.equal(control.requests.length, 2);
  t.equal(budgets.take('acc', 300), false, 'never past what was granted');

  const slow = await startBudgetControl(t, { funds: { acc: 10_000 } });
  const waiting = budgetsOn(t, slow);
  const held = gate(slow);
  const started = Date.now();
  await waiting.want('acc', 500);
  t.ok(Date.now() - started >= BUDGET_WAIT_MS - 50, 'released after the wait, with no answer');
  t.equal(waiting.take('acc', 500), false, 'and still short');
  held.open();
  await waitFor(() => waiting.available('acc') === 500, 'the late answer still counts');
});
