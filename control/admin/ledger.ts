/**
 * The money side of the admin API: `/_admin/v1/pool` (show, fund, pause, resume),
 * `/_admin/v1/ledger` (verify, balances) and `/_admin/v1/payouts` (list, mark-paid). Funding and
 * payouts are money actions (money-actions.ts): audited, and waiting for a second operator when
 * `money.approvals` is 2; a ledger rule they would break answers 409 `svc_conflict`. Pausing
 * coverage is audited too, but never waits (pool-pause.ts).
 */
import { SvcError } from '../../protocol/errors';
import { poolShow } from './lp-actions';
import { readJson, sendJson } from '../../runtime/http';
import {
  FundPoolRequest,
  MarkPaidRequest,
  PoolPauseRequest,
  type BalancesView,
  type LedgerVerifyView,
  type PayoutsView,
  type PoolPauseView,
  type PoolView,
} from '../../protocol/settlement';
import { walletChain } from '../../protocol/wallet';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';
import { moneyAction } from './money-actions';
import { setPoolPause } from './pool-pause';

export function registerLedgerRoutes(router: Router, ctx: ControlContext): void {
  const ledger = ctx.store.ledger;

  router.get('/_admin/v1/pool', async ({ res }) => sendJson(res, 200, (await poolShow(ctx)) satisfies PoolView));

  router.post('/_admin/v1/pool/fund', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(FundPoolRequest, await readJson(req));
    const { status, body } = await moneyAction(ctx, { actor, tokenId }, 'pool.fund', input);
    sendJson(res, status, body);
  });

  for (const [path, paused] of [
    ['/_admin/v1/pool/pause', true],
    ['/_admin/v1/pool/resume', false],
  ] as const) {
    router.post(path, async ({ req, res, actor, tokenId }) => {
      const input = parseBody(PoolPauseRequest, await readJson(req));
      sendJson(res, 200, (await setPoolPause(ctx, { actor, tokenId }, paused, input)) satisfies PoolPauseView);
    });
  }

  router.get('/_admin/v1/ledger/verify', async ({ res }) => sendJson(res, 200, (await ledger.verify()) satisfies LedgerVerifyView));

  router.get('/_admin/v1/ledger/balances', { query: ['prefix'] }, async ({ res, query }) => {
    const prefix = query.get('prefix') ?? undefined;
    sendJson(res, 200, { balances: await ledger.balances(prefix) } satisfies BalancesView);
  });

  router.get('/_admin/v1/payouts', { query: ['wallet'] }, async ({ res, query }) => {
    const wallet = query.get('wallet')?.trim();
    if (wallet !== undefined && walletChain(wallet) === null) {
      throw new SvcError('svc_bad_request', 'wallet is not a Solana or EVM address', {
        extra: { errors: [{ field: 'wallet', message: 'must be a Solana or EVM address' }] },
      });
    }
    const payouts = await ledger.payouts(wallet);
    const body: PayoutsView = { payouts, total_owed: payouts.reduce((n, p) => n + p.owed, 0) };
    sendJson(res, 200, body);
  });

  router.post('/_admin/v1/payouts/mark-paid', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(MarkPaidRequest, await readJson(req));
    const { status, body } = await moneyAction(ctx, { actor, tokenId }, 'payouts.mark_paid', input);
    sendJson(res, status, body);
  });
}
