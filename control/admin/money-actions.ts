/**
 * The one place a two-person action decides whether it acts now or waits for a second operator:
 * funding the pool, marking a payout paid, depositing into an account, rotating the receipt
 * signing key, attaching or detaching an account's payout wallet (through the account or one of
 * its keys: account-actions.ts), adding an operator who gets `money` or `operators`, rotating
 * another operator's token who holds one (protocol/approvals.ts; the operators' two in
 * operator-actions.ts). Each of those routes validates its request (and, for an operator
 * added, that the caller holds every scope it grants) and hands it to {@link moneyAction}:
 *
 * - with `money.approvals: 1` (the default), or for an operator added or rotated who holds
 *   neither `money` nor `operators` (or rotating its own token), the action runs at once, as
 *   the operator who asked;
 * - with `2` it is recorded as a pending request (its own audit row, `approvals.request`) and
 *   answered `202`. A second operator holding the scopes the action needs approves it
 *   (`/_admin/v1/approvals/{id}/approve`, control/admin/approvals.ts): the same action then runs
 *   from the recorded request, as the requester, with `approved_by` in its audit row. The
 *   request is marked approved inside the action's own transaction, so an approval either acts
 *   exactly once or leaves the request pending (two approvals at once, on one control or two:
 *   one acts, the other gets 409).
 *
 * A request records what was asked, never a secret: an operator's token is made when the add or
 * rotation runs (at once, or when it is approved), answered once to whoever made it run, and
 * stored as its SHA-256.
 */
import { APPROVAL_TTL_MS, MONEY_ACTION_REQUESTS, type ApprovalView, type MoneyAction, type ApprovedView } from '../../protocol/approvals';
import { SvcError } from '../../protocol/errors';
import { newId } from '../../protocol/keys';
import type { FundView, MarkPaidView } from '../../protocol/settlement';
import type { RotateKeyView } from '../../protocol/receipts';
import type { ControlContext } from '../context';
import type { Actor } from '../store';
import { LedgerError } from '../store/ledger';
import { LpError } from '../store/lps';
import { addLp, cancelWithdrawal, depositLp, poolShow, withdrawLp } from './lp-actions';
import type { Executor, Input, Within } from './action-executor';
import { addOperator, rotateOperator } from './operator-actions';
import {
  attachAccountWallet,
  attachKeyWallet,
  clearRefill,
  deposit,
  detachAccountWallet,
  detachKeyWallet,
  setRefill,
} from './account-actions';
import { approvalStatus, type ApprovalRow } from '../store/approvals';

const NOTHING: Within = async () => {};

/**
 * A ledger or liquidity provider rule the change would break (a payout over what is owed, a
 * deposit reference used, a withdrawal over the position): 409 `svc_conflict` with the rule's
 * reason (and the field it is about).
 */
async function ledgerConflict<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof LedgerError) throw new SvcError('svc_conflict', err.message, { extra: { reason: err.reason } });
    if (err instanceof LpError) throw new SvcError('svc_conflict', err.message, { extra: { reason: err.reason, field: err.field } });
    throw err;
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function approvalView(row: ApprovalRow, now: number): ApprovalView {
  return {
    id: row.id,
    status: approvalStatus(row, now),
    action: row.action,
    target: row.target,
    detail: JSON.parse(row.detail) as Record<string, unknown>,
    requested_by: row.requested_by,
    requested_at: iso(row.requested_at),
    expires_at: iso(row.expires_at),
    decided_by: row.decided_by,
    decided_at: row.decided_at === null ? null : iso(row.decided_at),
    reason: row.reason,
  };
}

const fund: Executor<'pool.fund', FundView> = {
  status: 201,
  target: () => 'pool',
  run: async (ctx, input, by, within) => {
    const now = ctx.now();
    const note = input.note ?? null;
    const { result: transferId } = await ctx.store.mutate(
      { ...by, now },
      { action: 'pool.fund', target: 'pool', detail: { amount: input.amount, note } },
      async (tx) => {
        await within(tx);
        return tx.ledger.fund(input.amount, now, by.actor, note);
      },
    );
    // Answered once the gateways know: a call made after the answer is covered if the money allows.
    await ctx.coverageChanged?.();
    return { transfer_id: transferId, amount: input.amount, pool: await poolShow(ctx) };
  },
};

const markPaid: Executor<'payouts.mark_paid', MarkPaidView> = {
  status: 201,
  target: (input) => input.wallet,
  run: async (ctx, input, by, within) => {
    const now = ctx.now();
    const { result } = await ledgerConflict(() =>
      ctx.store.mutate(
        { ...by, now },
        { action: 'payouts.mark_paid', target: input.wallet, detail: { amount: input.amount, reference: input.reference } },
        async (tx) => {
          await within(tx);
          return tx.ledger.markPaid(input.wallet, input.amount, input.reference, now, by.actor);
        },
      ),
    );
    return result;
  },
};

/**
 * Rotations under way, per receipts core: a core holds one prepared key, so a second rotation
 * started before the first is published would replace it (`SVC_ERR_KEY_NOT_PREPARED`). Each
 * control runs its rotations one after another; the controls of a shared database each rotate
 * their own core.
 */
const rotating = new WeakMap<object, Promise<unknown>>();

function oneRotationAtATime<T>(core: object, fn: () => Promise<T>): Promise<T> {
  const run = (rotating.get(core) ?? Promise.resolve()).then(fn, fn);
  rotating.set(
    core,
    run.catch(() => undefined),
  );
  return run;
}

const rotateKey: Executor<'receipts.rotate_key', RotateKeyView> = {
  status: 200,
  target: () => null,
  run: (ctx, _input, by, within) => oneRotationAtATime(ctx.store.receipts, () => rotateNow(ctx, by, within)),
};

async function rotateNow(ctx: ControlContext, by: Actor, within: Within): Promise<RotateKeyView> {
  const now = ctx.now();
  const prepared = await ctx.store.receipts.prepareRotation();
  await ctx.store.mutate(
    { ...by, now },
    { action: 'receipts.rotate_key', target: prepared.kid, detail: { previous_kid: prepared.previous_kid } },
    async (tx) => {
      await within(tx);
      await tx.receipts.publishPrepared(prepared.kid, now);
    },
  );
  await ctx.store.receipts.activatePrepared(prepared.kid);
  return {
    kid: prepared.kid,
    previous_kid: prepared.previous_kid,
    created_at: new Date(now).toISOString(),
    published: (await ctx.store.receipts.jwks()).keys.map((k) => k.kid),
  };
}

const EXECUTORS: { [A in MoneyAction]: Executor<A, ApprovedView['result']> } = {
  'pool.fund': fund,
  'payouts.mark_paid': markPaid,
  'receipts.rotate_key': rotateKey,
  'keys.wallet.attach': attachKeyWallet,
  'keys.wallet.detach': detachKeyWallet,
  'accounts.deposit': deposit,
  'accounts.wallet.attach': attachAccountWallet,
  'accounts.wallet.detach': detachAccountWallet,
  'accounts.refill.set': setRefill,
  'accounts.refill.clear': clearRefill,
  'operators.add': addOperator,
  'operators.rotate': rotateOperator,
  'lps.add': addLp,
  'lps.deposit': depositLp,
  'lps.withdraw': withdrawLp,
  'lps.cancel': cancelWithdrawal,
};

/** What a money route answers: the action's own answer, or `202` and the pending request. */
export interface MoneyAnswer {
  status: number;
  body: ApprovedView['result'] | ApprovalView;
}

/**
 * Act on `input` as `by` now, or, when `money.approvals` is 2 (and the action needs a second
 * person for this input), record it as a request for a second operator and answer `202` with it.
 */
export async function moneyAction<A extends MoneyAction>(ctx: ControlContext, by: Actor, action: A, input: Input<A>): Promise<MoneyAnswer> {
  const executor = EXECUTORS[action] as Executor<A, ApprovedView['result']>;
  if (ctx.config.money.approvals < 2 || executor.twoPerson?.(input, by) === false) {
    const body = await ledgerConflict(() => executor.run(ctx, input, by, NOTHING));
    return { status: executor.statusOf?.(body) ?? executor.status, body };
  }
  const now = ctx.now();
  const row = {
    id: newId('apr'),
    action,
    target: executor.target(input),
    detail: JSON.stringify(input),
    requested_by: by.actor,
    requested_token_id: by.tokenId ?? null,
    requested_at: now,
    expires_at: now + APPROVAL_TTL_MS,
  };
  await ctx.store.mutate(
    { ...by, now },
    { action: 'approvals.request', target: row.id, detail: { action, target: row.target, request: input } },
    (tx) => tx.approvals.insert(row),
  );
  return { status: 202, body: approvalView({ ...row, status: 'pending', decided_by: null, decided_at: null, reason: null }, now) };
}

/**
 * Run an approved request's action from what it recorded, as its requester with `approvedBy`
 * in the audit row; `claim` marks the request approved inside the action's transaction (and
 * throws when it no longer can be).
 */
export function runApproved(
  ctx: ControlContext,
  action: MoneyAction,
  detail: string,
  by: Actor,
  claim: Within,
): Promise<ApprovedView['result']> {
  const input = MONEY_ACTION_REQUESTS[action].parse(JSON.parse(detail));
  return ledgerConflict(() => (EXECUTORS[action] as Executor<MoneyAction, ApprovedView['result']>).run(ctx, input, by, claim));
}
