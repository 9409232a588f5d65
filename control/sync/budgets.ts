/**
 * `POST /_sync/v1/budgets` (sync token; protocol/budgets.ts): a gateway instance gives back
 * what it was asked for, asks for budget, and learns what to give back. Returns are recorded
 * first (they free money for the grants), then each wanted account is granted on its own
 * transaction (`BudgetsTable.grant`), and every account of the instance that another instance
 * was left short of lately is answered with what to give back, listed or not.
 */
import { BudgetRequest, SYNC_BUDGETS_PATH, type BudgetAnswer, type BudgetGrant } from '../../protocol/budgets';
import { readJson, sendJson } from '../../runtime/http';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';

export function registerBudgetRoutes(router: Router, ctx: ControlContext): void {
  router.post(SYNC_BUDGETS_PATH, async ({ req, res }) => {
    const body = parseBody(BudgetRequest, await readJson(req));
    sendJson(res, 200, await exchange(ctx, body));
  });
}

/** One budget request's effects, in order, and the answer. */
export async function exchange(ctx: ControlContext, body: BudgetRequest): Promise<BudgetAnswer> {
  const budgets = ctx.store.budgets;
  const { gateway_id: gateway, instance } = body;
  const now = ctx.now();
  if (body.drained === true) {
    const released = await budgets.release(gateway, instance, now);
    if (released > 0) ctx.log.info('gateway budgets released', { gateway_id: gateway, instance, escrows: released });
  }
  const answer = new Map<string, BudgetGrant>();
  const put = (account: string, granted: number, ask: number) => {
    const known = answer.get(account);
    answer.set(account, { account, granted: Math.max(granted, known?.granted ?? 0), ask: Math.max(ask, known?.ask ?? 0) });
  };
  for (const held of body.held) {
    const r = await budgets.report(held.account, gateway, instance, held.returned, now);
    put(held.account, r?.granted ?? 0, r?.ask ?? 0);
  }
  for (const want of body.want) {
    const g = await budgets.grant(want.account, gateway, instance, want.need, now);
    put(want.account, g?.granted ?? 0, 0);
  }
  // Accounts this instance holds that others are short of: what it should give back.
  for (const account of await budgets.shortOf(gateway, instance, now)) {
    if (answer.get(account)?.ask) continue;
    const r = await budgets.standing(account, gateway, instance, now);
    if (r !== null) put(account, r.granted, r.ask);
  }
  return { accounts: [...answer.values()] };
}
