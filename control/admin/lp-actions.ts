/**
 * What money-actions.ts runs for the pool's capital (docs/money.md, "Pool capital"): a
 * liquidity provider added (`lps.add`), a deposit into a position (`lps.deposit`), a withdrawal
 * requested (`lps.withdraw`) or cancelled (`lps.cancel`). Each is audited with the operator and,
 * with `money.approvals: 2`, waits for a second one. Paying due withdrawals is the withdrawal
 * loop's (withdrawals.ts), not an operator's.
 */
import type { LpDepositView, LpDetail, LpView, WithdrawalView } from '../../protocol/lps';
import { SvcError } from '../../protocol/errors';
import type { PoolView } from '../../protocol/settlement';
import type { ControlContext } from '../context';
import { lpView, shareEventView, withdrawalView, type LpRow, type PoolCapital } from '../store/lps';
import { coverageNow, poolCapital } from '../pool';
import type { Audit } from '../store';
import type { Executor } from './action-executor';

const HOUR_MS = 3_600_000;

/** A provider by id or name, or 404 naming the field. */
export async function lpOrNotFound(ctx: ControlContext, ref: string, field = 'id'): Promise<LpRow> {
  const row = await ctx.store.lps.get(ref);
  if (row === undefined) throw new SvcError('svc_not_found', `no liquidity provider named ${ref}`, { extra: { field } });
  return row;
}

/** Every provider's position at the pool's capital `figures`. */
export async function lpViews(ctx: ControlContext, figures: PoolCapital, only?: LpRow): Promise<LpView[]> {
  const [rows, totals, pending] = await Promise.all([
    only === undefined ? ctx.store.lps.list() : Promise.resolve([only]),
    ctx.store.lps.totals(),
    ctx.store.lps.withdrawals({ pending: true, ...(only === undefined ? {} : { providerId: only.id }) }),
  ]);
  return rows.map((row) =>
    lpView(
      row,
      totals.get(row.id) ?? { deposited: 0, withdrawn: 0 },
      pending.filter((w) => w.provider_id === row.id),
      figures.capital,
      figures.shares,
    ),
  );
}

/** A provider's position, its withdrawals and share events (newest first, at most 100 each). */
export async function lpDetail(ctx: ControlContext, row: LpRow): Promise<LpDetail> {
  const { figures } = await poolCapital(ctx);
  const [[view], withdrawals, events] = await Promise.all([
    lpViews(ctx, figures, row),
    ctx.store.lps.withdrawals({ providerId: row.id }),
    ctx.store.lps.events(row.id, 100),
  ]);
  return {
    ...view!,
    withdrawals: withdrawals.reverse().slice(0, 100).map(withdrawalView),
    events: events.map(shareEventView),
  };
}

export const addLp: Executor<'lps.add', LpView> = {
  status: 201,
  target: (input) => input.name,
  run: async (ctx, input, by, within) => {
    const now = ctx.now();
    const audit: Audit = { action: 'lps.add', target: input.name, detail: { name: input.name } };
    const { result } = await ctx.store.mutate({ ...by, now }, audit, async (tx) => {
      await within(tx);
      const row = await tx.lps.add(input.name, now, by.actor);
      audit.target = row.id;
      return row;
    });
    const { figures } = await poolCapital(ctx);
    return (await lpViews(ctx, figures, result))[0]!;
  },
};

/**
 * A deposit into a provider's position: external → pool (`lp_deposit`), minting its shares at
 * the value a share has then. 201 when it moved the money, 200 for its reference again with the
 * same provider and amount; another deposit's reference is 409 (`reason: reference_used`).
 */
export const depositLp: Executor<'lps.deposit', LpDepositView> = {
  status: 201,
  statusOf: (answer) => (answer.created ? 201 : 200),
  target: (input) => input.id,
  run: async (ctx, input, by, within) => {
    const provider = await lpOrNotFound(ctx, input.id);
    const now = ctx.now();
    const detail: Record<string, unknown> = { amount: input.amount, reference: input.reference };
    const audit: Audit = { action: 'lps.deposit', target: provider.id, detail };
    const { result } = await ctx.store.mutate({ ...by, now }, audit, async (tx) => {
      await within(tx);
      const made = await tx.lps.deposit(provider.id, input.amount, 'lp_deposit', input.reference, now, by.actor);
      Object.assign(detail, { transfer_id: made.transfer_id, shares: made.shares, created: made.created });
      return made;
    });
    // Answered once the gateways know, as a pool fund is.
    if (result.created) await ctx.coverageChanged?.();
    const { figures } = await poolCapital(ctx);
    const [position] = await lpViews(ctx, figures, await ctx.store.lps.get(provider.id));
    return { ...result, reference: input.reference, position: position! };
  },
};

/** A withdrawal queued: due after `pool.withdrawalNoticeH`, then paid from free capital (withdrawals.ts). */
export const withdrawLp: Executor<'lps.withdraw', WithdrawalView> = {
  status: 201,
  target: (input) => input.id,
  run: async (ctx, input, by, within) => {
    const provider = await lpOrNotFound(ctx, input.id);
    const now = ctx.now();
    const amount = input.amount ?? null;
    const detail: Record<string, unknown> = { amount, notice_h: ctx.config.pool.withdrawalNoticeH };
    const audit: Audit = { action: 'lps.withdraw', target: provider.id, detail };
    const { result } = await ctx.store.mutate({ ...by, now }, audit, async (tx) => {
      await within(tx);
      const row = await tx.lps.requestWithdrawal(provider.id, amount, now, ctx.config.pool.withdrawalNoticeH * HOUR_MS, by.actor);
      detail.withdrawal_id = row.id;
      return row;
    });
    return withdrawalView(result);
  },
};

/** A pending withdrawal cancelled; what was paid of it stays paid. Not pending: 409 (`reason: not_pending`). */
export const cancelWithdrawal: Executor<'lps.cancel', WithdrawalView> = {
  status: 200,
  target: (input) => String(input.id),
  run: async (ctx, input, by, within) => {
    if ((await ctx.store.lps.withdrawal(input.id)) === undefined)
      throw new SvcError('svc_not_found', `no withdrawal ${input.id}`, { extra: { field: 'id' } });
    const now = ctx.now();
    const audit: Audit = { action: 'lps.cancel', target: String(input.id), detail: {} };
    const { result } = await ctx.store.mutate({ ...by, now }, audit, async (tx) => {
      await within(tx);
      const row = await tx.lps.cancelWithdrawal(input.id, now, by.actor);
      audit.detail = { provider_id: row.provider_id, amount: row.amount, paid: row.paid };
      return row;
    });
    return withdrawalView(result);
  },
};

/** What `svcctl pool show` prints: the ledger's figures, whether an operator paused coverage, and the capital's. */
export async function poolShow(ctx: ControlContext): Promise<PoolView> {
  const [ledger, { coverage, pool }] = await Promise.all([ctx.store.ledger.poolView(), coverageNow(ctx)]);
  return { ...ledger, coverage, capital: pool };
}
