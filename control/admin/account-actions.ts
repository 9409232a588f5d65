/**
 * What money-actions.ts runs for an account's money: a deposit (`accounts.deposit`), its refill
 * rule set or cleared (`accounts.refill.set` / `.clear`), and its payout wallet attached or
 * detached (`accounts.wallet.attach` / `.detach`), which a key's wallet route (`keys.wallet.…`)
 * sets too, for the key's account. Also the account's view and lookup,
 * which the account routes (accounts.ts) share.
 */
import type { AccountChange, AccountView, DepositView, RefillChange, RefillRecord } from '../../protocol/accounts';
import type { KeyChange } from '../../protocol/admin';
import { SvcError } from '../../protocol/errors';
import type { ControlContext } from '../context';
import type { Audit } from '../store/changes';
import { keyOrNotFound, viewKey } from '../keys';
import type { Actor } from '../store';
import { refillPeriod, type AccountSummary, type RefillRow } from '../store/accounts';
import { refillAccount } from './refills';
import type { Executor, Within } from './action-executor';

const iso = (ms: number): string => new Date(ms).toISOString();

/** The account as the admin API shows it at `now` (when its refill rule's next period begins). */
export function accountView(row: AccountSummary, now: number): AccountView {
  return {
    id: row.id,
    name: row.name,
    wallet: row.wallet,
    balance: row.balance,
    low: row.low,
    refill:
      row.refill_amount === null || row.refill_every === null
        ? null
        : {
            amount: row.refill_amount,
            every: row.refill_every,
            day: row.refill_day,
            set_by: row.refill_by ?? '',
            next_at: iso(refillPeriod({ every: row.refill_every, day: row.refill_day }, now).end),
          },
    keys: row.keys,
    created_at: iso(row.created_at),
    created_by: row.created_by,
  };
}

/** The account `ref` names (id or name) with its keys and balance, or 404 `svc_not_found`. */
export async function accountOrNotFound(ctx: ControlContext, ref: string): Promise<AccountSummary> {
  const row = await ctx.store.accounts.byRef(ref);
  const summary = row === undefined ? undefined : await ctx.store.accounts.summary(row.id);
  if (summary === undefined) throw new SvcError('svc_not_found', `no account named ${ref}`);
  return summary;
}

/**
 * Account `accountId`'s payout wallet attached (`wallet`) or detached (null), under `action`
 * (an account's, or a key's for its account: `target` is then the key), with the wallet it
 * replaces in the audit row. Answers the state version.
 */
async function setAccountWallet(
  ctx: ControlContext,
  accountId: string,
  wallet: string | null,
  audit: { action: string; target: string },
  by: Actor,
  within: Within,
): Promise<number> {
  // Filled in under the writer lock: the wallet this change replaces is the one set then.
  const detail: Record<string, unknown> = wallet === null ? { account_id: accountId } : { wallet, account_id: accountId };
  const { version } = await ctx.store.mutate({ ...by, now: ctx.now() }, { ...audit, detail }, async (tx) => {
    await within(tx);
    const current = await tx.accounts.byId(accountId);
    if (current === undefined) throw new SvcError('svc_not_found', `no account with id ${accountId}`);
    detail.previous = current.wallet;
    await tx.accounts.setWallet(accountId, wallet);
  });
  return version;
}

/** A key's wallet: its account's (`svcctl keys wallet`), answered as the key. */
async function setKeyWallet(ctx: ControlContext, id: string, wallet: string | null, by: Actor, within: Within): Promise<KeyChange> {
  const row = await keyOrNotFound(ctx, id);
  const action = wallet === null ? 'keys.wallet.detach' : 'keys.wallet.attach';
  const version = await setAccountWallet(ctx, row.account_id, wallet, { action, target: row.id }, by, within);
  return { ...(await viewKey(ctx, await keyOrNotFound(ctx, row.id))), version };
}

async function accountWallet(ctx: ControlContext, id: string, wallet: string | null, by: Actor, within: Within): Promise<AccountChange> {
  const account = await accountOrNotFound(ctx, id);
  const action = wallet === null ? 'accounts.wallet.detach' : 'accounts.wallet.attach';
  const version = await setAccountWallet(ctx, account.id, wallet, { action, target: account.id }, by, within);
  return { ...accountView(await accountOrNotFound(ctx, account.id), ctx.now()), version };
}

export const attachKeyWallet: Executor<'keys.wallet.attach', KeyChange> = {
  status: 200,
  target: (input) => input.id,
  run: (ctx, input, by, within) => setKeyWallet(ctx, input.id, input.wallet, by, within),
};

export const detachKeyWallet: Executor<'keys.wallet.detach', KeyChange> = {
  status: 200,
  target: (input) => input.id,
  run: (ctx, input, by, within) => setKeyWallet(ctx, input.id, null, by, within),
};

export const attachAccountWallet: Executor<'accounts.wallet.attach', AccountChange> = {
  status: 200,
  target: (input) => input.id,
  run: (ctx, input, by, within) => accountWallet(ctx, input.id, input.wallet, by, within),
};

export const detachAccountWallet: Executor<'accounts.wallet.detach', AccountChange> = {
  status: 200,
  target: (input) => input.id,
  run: (ctx, input, by, within) => accountWallet(ctx, input.id, null, by, within),
};

/**
 * A deposit into an account: external → `account:<id>`, audited with the operator (and whether
 * it moved money: a reference recorded before answers the first deposit and moves nothing).
 * 201 when it moved the money, 200 for a replay; another deposit's reference is 409
 * `svc_conflict` (`reason: reference_used`), through money-actions.ts' ledger rules.
 */
export const deposit: Executor<'accounts.deposit', DepositView> = {
  status: 201,
  statusOf: (answer) => (answer.created ? 201 : 200),
  target: (input) => input.id,
  run: async (ctx, input, by, within) => {
    const account = await accountOrNotFound(ctx, input.id);
    const now = ctx.now();
    const detail: Record<string, unknown> = { amount: input.amount, reference: input.reference };
    const audit: Audit = { action: 'accounts.deposit', target: account.id, detail };
    const { result, version } = await ctx.store.mutate({ ...by, now }, audit, async (tx) => {
      await within(tx);
      const made = await tx.ledger.deposit(account.id, input.amount, input.reference, now, by.actor);
      detail.transfer_id = made.transfer_id;
      detail.created = made.created;
      // Gateways that found the account short ask again (`accounts_funded`); `--wait` waits for them.
      if (made.created) audit.changes = [{ kind: 'account', entity: account.id }];
      return made;
    });
    return { ...result, version };
  },
};

/** A period's refill as the admin API shows it. */
export const refillRecord = (row: RefillRow): RefillRecord => ({
  period: row.period,
  target: row.target,
  amount: row.amount,
  transfer_id: row.transfer_id,
  at: iso(row.at),
});

/**
 * An account's refill rule set (replacing any before) by the operator, then the current
 * period's refill made at once (refills.ts; nothing moves when it was made this period, under
 * the rule before or by another control). Audited `accounts.refill.set` with the rule.
 */
export const setRefill: Executor<'accounts.refill.set', RefillChange> = {
  status: 200,
  target: (input) => input.id,
  run: async (ctx, input, by, within) => {
    const account = await accountOrNotFound(ctx, input.id);
    const rule = { amount: input.amount, every: input.every, day: input.every === 'month' ? (input.day ?? 1) : null };
    const { version } = await ctx.store.mutate(
      { ...by, now: ctx.now() },
      { action: 'accounts.refill.set', target: account.id, detail: { ...rule } },
      async (tx) => {
        await within(tx);
        await tx.accounts.setRefill(account.id, rule, by.actor);
      },
    );
    const refilled = await refillAccount(ctx, account.id);
    const now = ctx.now();
    return {
      ...accountView(await accountOrNotFound(ctx, account.id), now),
      version: refilled?.version ?? version,
      refilled: refilled === null ? null : refillRecord(refilled.refill),
    };
  },
};

/** An account's refill rule cleared: no refill from the next period on. Audited `accounts.refill.clear`. */
export const clearRefill: Executor<'accounts.refill.clear', AccountChange> = {
  status: 200,
  target: (input) => input.id,
  run: async (ctx, input, by, within) => {
    const account = await accountOrNotFound(ctx, input.id);
    const { version } = await ctx.store.mutate(
      { ...by, now: ctx.now() },
      {
        action: 'accounts.refill.clear',
        target: account.id,
        detail: {
          previous:
            account.refill_amount === null ? null : { amount: account.refill_amount, every: account.refill_every, day: account.refill_day },
        },
      },
      async (tx) => {
        await within(tx);
        await tx.accounts.setRefill(account.id, null, by.actor);
      },
    );
    return { ...accountView(await accountOrNotFound(ctx, account.id), ctx.now()), version };
  },
};
