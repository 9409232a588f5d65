/**
 * The money side of the admin API: `/_admin/v1/pool` (show, fund), `/_admin/v1/ledger`
 * (verify, balances) and `/_admin/v1/payouts` (list, mark-paid). Funding and payouts are
 * audited mutations; a ledger rule they would break answers 409 `svc_conflict`.
 */
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../protocol/http';
import {
  FundPoolRequest,
  MarkPaidRequest,
  type BalancesView,
  type FundView,
  type LedgerVerifyView,
  type MarkPaidView,
  type PayoutsView,
  type PoolView,
} from '../../protocol/settlement';
import { walletChain } from '../../protocol/wallet';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';
import { LedgerError } from '../store/ledger';
import { moneyAction } from './money-actions';

async function ledgerConflict<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof LedgerError) throw new SvcError('svc_conflict', err.message, { extra: { reason: err.reason } });
    throw err;
  }
}

export function registerLedgerRoutes(router: Router, ctx: ControlContext): void {
  const ledger = ctx.store.ledger;

  router.get('/_admin/v1/pool', async ({ res }) => sendJson(res, 200, (await ledger.poolView()) satisfies PoolView));

  router.post('/_admin/v1/pool/fund', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(FundPoolRequest, await readJson(req));
    const transferId = await moneyAction(
      ctx,
      { actor, tokenId },
      {
        action: 'pool.fund',
        target: 'pool',
        detail: { amount: input.amount, note: input.note ?? null },
        act: async (by) => {
          const now = ctx.now();
          const { result } = await ctx.store.mutate(
            { ...by, now },
            { action: 'pool.fund', target: 'pool', detail: { amount: input.amount, note: input.note ?? null } },
            (tx) => tx.ledger.fund(input.amount, now, by.actor, input.note ?? null),
          );
          return result;
        },
      },
    );
    const body: FundView = { transfer_id: transferId, amount: input.amount, pool: await ledger.poolView() };
    sendJson(res, 201, body);
  });

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
    const { result } = await moneyAction(
      ctx,
      { actor, tokenId },
      {
        action: 'payouts.mark_paid',
        target: input.wallet,
        detail: { amount: input.amount, reference: input.reference },
        act: (by) => {
          const now = ctx.now();
          return ledgerConflict(() =>
            ctx.store.mutate(
              { ...by, now },
              { action: 'payouts.mark_paid', target: input.wallet, detail: { amount: input.amount, reference: input.reference } },
              (tx) => tx.ledger.markPaid(input.wallet, input.amount, input.reference, now, by.actor),
            ),
          );
        },
      },
    );
    sendJson(res, 201, result satisfies MarkPaidView);
  });
}
