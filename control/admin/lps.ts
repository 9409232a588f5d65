/**
 * `/_admin/v1/lps` and `/_admin/v1/lp-withdrawals`: the liquidity providers who own the pool's
 * capital (docs/money.md, "Pool capital"). Every route is the `money` scope's, reads included
 * (who holds the pool's capital is the money operators' business); the changes are money
 * actions (lp-actions.ts), audited and waiting for a second operator when `money.approvals` is 2.
 */
import {
  CreateLpRequest,
  LpDepositRequest,
  WithdrawRequest,
  WithdrawalListQuery,
  type LpList,
  type WithdrawalList,
} from '../../protocol/lps';
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../runtime/http';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';
import { withdrawalView } from '../store/lps';
import { lpDetail, lpOrNotFound, lpViews } from './lp-actions';
import { poolCapital } from '../pool';
import { moneyAction } from './money-actions';

/** A withdrawal id from the path: a positive integer, or 404. */
function withdrawalId(text: string): number {
  const id = /^[1-9][0-9]{0,14}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(id)) throw new SvcError('svc_not_found', `no withdrawal ${text}`, { extra: { field: 'id' } });
  return id;
}

export function registerLpRoutes(router: Router, ctx: ControlContext): void {
  router.get('/_admin/v1/lps', async ({ res }) => {
    const { figures, view } = await poolCapital(ctx);
    const body: LpList = { providers: await lpViews(ctx, figures), pool: view };
    sendJson(res, 200, body);
  });

  router.post('/_admin/v1/lps', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(CreateLpRequest, await readJson(req));
    if ((await ctx.store.lps.get(input.name)) !== undefined) {
      throw new SvcError('svc_conflict', `a liquidity provider named ${input.name} exists`, {
        extra: { reason: 'name_taken', field: 'name' },
      });
    }
    const answer = await moneyAction(ctx, { actor, tokenId }, 'lps.add', input);
    sendJson(res, answer.status, answer.body);
  });

  router.get('/_admin/v1/lps/:id', async ({ res, params }) => {
    sendJson(res, 200, await lpDetail(ctx, await lpOrNotFound(ctx, params.id!)));
  });

  // One deposit per reference; the same reference again answers the first (lp-actions.ts).
  router.post('/_admin/v1/lps/:id/deposit', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(LpDepositRequest, await readJson(req));
    const provider = await lpOrNotFound(ctx, params.id!);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'lps.deposit', { id: provider.id, ...input });
    sendJson(res, answer.status, answer.body);
  });

  router.post('/_admin/v1/lps/:id/withdrawals', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(WithdrawRequest, await readJson(req));
    const provider = await lpOrNotFound(ctx, params.id!);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'lps.withdraw', { id: provider.id, ...input });
    sendJson(res, answer.status, answer.body);
  });

  router.get('/_admin/v1/lp-withdrawals', { query: ['pending', 'provider'] }, async ({ res, query }) => {
    const q = parseBody(WithdrawalListQuery, Object.fromEntries(query));
    const provider = q.provider === undefined ? undefined : await lpOrNotFound(ctx, q.provider, 'provider');
    const rows = await ctx.store.lps.withdrawals({ pending: q.pending === 'true', ...(provider ? { providerId: provider.id } : {}) });
    const body: WithdrawalList = { withdrawals: rows.map(withdrawalView), pool: (await poolCapital(ctx)).view };
    sendJson(res, 200, body);
  });

  router.post('/_admin/v1/lp-withdrawals/:id/cancel', async ({ res, params, actor, tokenId }) => {
    const answer = await moneyAction(ctx, { actor, tokenId }, 'lps.cancel', { id: withdrawalId(params.id!) });
    sendJson(res, answer.status, answer.body);
  });
}
