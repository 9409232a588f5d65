/**
 * `/_admin/v1/accounts`: add, list and show the accounts that hold prepaid money. Adding one
 * needs the `keys` scope (an account is where keys are issued), and so does its low-balance
 * threshold; its money (deposits, the refill rule, the wallet) is the `money` scope's, each a
 * money action
 * (money-actions.ts, account-actions.ts), audited and waiting for a second operator when
 * `money.approvals` is 2.
 */
import {
  ACCOUNT_LIST_DEFAULT_LIMIT,
  ACCOUNT_NAME_CHARS,
  AccountListQuery,
  CreateAccountRequest,
  DepositRequest,
  RefillRequest,
  UpdateAccountRequest,
  type AccountChange,
  type AccountList,
} from '../../protocol/accounts';
import { WalletRequest } from '../../protocol/admin';
import { SvcError } from '../../protocol/errors';
import { newId } from '../../protocol/keys';
import { readJson, sendJson } from '../../runtime/http';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { pageCursor, parseBody } from '../http/validate';
import { accountOrNotFound, accountView } from './account-actions';
import { moneyAction } from './money-actions';

/** `next_cursor` of the account list: the last name of a page, base64url-encoded. */
export const encodeAccountCursor = (name: string): string => Buffer.from(name, 'utf8').toString('base64url');

/** The name in a `cursor` this API issued, or null when it is not one. */
export function decodeAccountCursor(token: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(token)) return null;
  const name = Buffer.from(token, 'base64url').toString('utf8');
  return ACCOUNT_NAME_CHARS.test(name) && encodeAccountCursor(name) === token ? name : null;
}

export async function listAccounts(ctx: ControlContext, query: URLSearchParams): Promise<AccountList> {
  const q = parseBody(AccountListQuery, Object.fromEntries(query));
  const after = pageCursor(q.cursor, decodeAccountCursor) ?? null;
  const limit = q.limit ?? ACCOUNT_LIST_DEFAULT_LIMIT;
  const rows = await ctx.store.accounts.page(after, limit);
  const last = rows[rows.length - 1];
  return {
    accounts: rows.map((row) => accountView(row, ctx.now())),
    next_cursor: rows.length === limit && last !== undefined ? encodeAccountCursor(last.name) : null,
  };
}

export function registerAccountRoutes(router: Router, ctx: ControlContext): void {
  router.post('/_admin/v1/accounts', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(CreateAccountRequest, await readJson(req));
    if ((await ctx.store.accounts.byName(input.name)) !== undefined) {
      throw new SvcError('svc_conflict', `an account named ${input.name} exists`, { extra: { reason: 'exists' } });
    }
    const now = ctx.now();
    const id = newId('acc');
    const { version } = await ctx.store.mutate(
      { actor, tokenId, now },
      { action: 'accounts.add', target: id, detail: { name: input.name, low: input.low ?? null } },
      async (tx) => {
        // Under the writer lock: two adds of one name, on one control or two, make one account.
        if ((await tx.accounts.byName(input.name)) !== undefined) {
          throw new SvcError('svc_conflict', `an account named ${input.name} exists`, { extra: { reason: 'exists' } });
        }
        await tx.accounts.insert({ id, name: input.name, low: input.low ?? null, created_at: now, created_by: actor });
      },
    );
    const body: AccountChange = { ...accountView((await ctx.store.accounts.summary(id))!, ctx.now()), version };
    sendJson(res, 201, body);
  });

  router.get('/_admin/v1/accounts', { query: ['limit', 'cursor'] }, async ({ res, query }) => {
    sendJson(res, 200, await listAccounts(ctx, query));
  });

  router.get('/_admin/v1/accounts/:id', async ({ res, params }) => {
    sendJson(res, 200, accountView(await accountOrNotFound(ctx, params.id!), ctx.now()));
  });

  // The low-balance threshold: account management, the `keys` scope's like adding one.
  router.patch('/_admin/v1/accounts/:id', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(UpdateAccountRequest, await readJson(req));
    const account = await accountOrNotFound(ctx, params.id!);
    const detail = { low: input.low, previous: account.low };
    const { version } = await ctx.store.mutate(
      { actor, tokenId, now: ctx.now() },
      { action: 'accounts.update', target: account.id, detail },
      (tx) => tx.accounts.setLow(account.id, input.low),
    );
    const body: AccountChange = { ...accountView(await accountOrNotFound(ctx, account.id), ctx.now()), version };
    sendJson(res, 200, body);
  });

  // The refill rule: money made from `external` once a period (refills.ts), so a money action.
  router.put('/_admin/v1/accounts/:id/refill', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(RefillRequest, await readJson(req));
    const account = await accountOrNotFound(ctx, params.id!);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'accounts.refill.set', { id: account.id, ...input });
    sendJson(res, answer.status, answer.body);
  });

  router.delete('/_admin/v1/accounts/:id/refill', async ({ res, params, actor, tokenId }) => {
    const account = await accountOrNotFound(ctx, params.id!);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'accounts.refill.clear', { id: account.id });
    sendJson(res, answer.status, answer.body);
  });

  // Deposits: one per reference; the same reference again answers the first (money-actions.ts).
  router.post('/_admin/v1/accounts/:id/deposit', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(DepositRequest, await readJson(req));
    const account = await accountOrNotFound(ctx, params.id!);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'accounts.deposit', { id: account.id, ...input });
    sendJson(res, answer.status, answer.body);
  });

  // The account's payout wallet: where its refunds are paid out.
  router.put('/_admin/v1/accounts/:id/wallet', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(WalletRequest, await readJson(req));
    const account = await accountOrNotFound(ctx, params.id!);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'accounts.wallet.attach', { id: account.id, wallet: input.wallet });
    sendJson(res, answer.status, answer.body);
  });

  router.delete('/_admin/v1/accounts/:id/wallet', async ({ res, params, actor, tokenId }) => {
    const account = await accountOrNotFound(ctx, params.id!);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'accounts.wallet.detach', { id: account.id });
    sendJson(res, answer.status, answer.body);
  });
}
