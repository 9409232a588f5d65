/** The admin API's accounts: who holds prepaid money. Part of control's document (`admin.ts`). */
import {
  AccountChange,
  AccountList,
  AccountListQuery,
  AccountView,
  CreateAccountRequest,
  DepositRequest,
  DepositView,
  RefillChange,
  RefillRequest,
  UpdateAccountRequest,
} from '../accounts';
import { WalletRequest } from '../admin';
import { PENDING_APPROVAL } from './admin-money';
import type { Operation } from './operation';
import { admin, created, ok } from './admin-op';
import { pathParam } from './common';

const ACCOUNT_ID = pathParam('id', 'the account id (`acc_…`) or its name');

export const ACCOUNT_OPERATIONS: readonly Operation[] = [
  admin('post', {
    path: '/_admin/v1/accounts',
    operationId: 'addAccount',
    summary: 'Add an account',
    description: 'Keys issued with `account` share its balance. 409 `svc_conflict` (`reason: exists`) when the name is taken.',
    tag: 'accounts',
    body: CreateAccountRequest,
    answers: [created('The account', { AccountChange })],
    errors: ['svc_conflict'],
  }),
  admin('get', {
    path: '/_admin/v1/accounts',
    operationId: 'listAccounts',
    summary: 'One page of accounts, by name',
    tag: 'accounts',
    query: AccountListQuery,
    answers: [ok('Accounts; follow `next_cursor` until it is null', { AccountList })],
  }),
  admin('get', {
    path: '/_admin/v1/accounts/{id}',
    operationId: 'getAccount',
    summary: 'One account, with its balance and key count',
    tag: 'accounts',
    params: [ACCOUNT_ID],
    answers: [ok('The account', { AccountView })],
    errors: ['svc_not_found'],
  }),
  admin('patch', {
    path: '/_admin/v1/accounts/{id}',
    operationId: 'updateAccount',
    summary: "Set the account's low-balance threshold",
    description: '`low: null` removes it. The agent’s account answer shows `balance.low: true` while the available balance is under it.',
    tag: 'accounts',
    params: [ACCOUNT_ID],
    body: UpdateAccountRequest,
    answers: [ok('The account', { AccountChange })],
    errors: ['svc_not_found'],
  }),
  admin('put', {
    path: '/_admin/v1/accounts/{id}/refill',
    operationId: 'setAccountRefill',
    summary: "Set the account's refill rule",
    description:
      'Once a period (a UTC day, or a month from its `day`, the month’s last when shorter) the account’s balance is brought up to `amount` (external → account; nothing moves when it holds that much). The current period’s refill is made at once (`refilled`); a period refilled before keeps its refill, and the rule applies from the next. Every period is refilled once, across controls and restarts. With `money.approvals: 2` a two-person action (202).',
    tag: 'accounts',
    params: [ACCOUNT_ID],
    body: RefillRequest,
    answers: [ok('The account, and the current period’s refill', { RefillChange }), PENDING_APPROVAL],
    errors: ['svc_not_found'],
  }),
  admin('delete', {
    path: '/_admin/v1/accounts/{id}/refill',
    operationId: 'clearAccountRefill',
    summary: "Clear the account's refill rule",
    description: 'No refill from the next period on. With `money.approvals: 2` a two-person action (202).',
    tag: 'accounts',
    params: [ACCOUNT_ID],
    answers: [ok('The account', { AccountChange }), PENDING_APPROVAL],
    errors: ['svc_not_found'],
  }),
  admin('post', {
    path: '/_admin/v1/accounts/{id}/deposit',
    operationId: 'depositIntoAccount',
    summary: 'Deposit into an account (external → account), once per reference',
    description:
      'The same `reference` with the same amount again answers 200 with the first deposit (`created: false`) and moves nothing; with another amount or account it is 409 `svc_conflict` (`reason: reference_used`). With `money.approvals: 2` a two-person action (202).',
    tag: 'accounts',
    params: [ACCOUNT_ID],
    body: DepositRequest,
    answers: [
      created('Deposited', { DepositView }),
      ok('The reference was recorded before, with this amount: the first deposit, nothing moved', { DepositView }),
      PENDING_APPROVAL,
    ],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
  admin('put', {
    path: '/_admin/v1/accounts/{id}/wallet',
    operationId: 'attachAccountWallet',
    summary: "Attach the account's payout wallet",
    description:
      'Where the account’s refunds are paid; every key of the account shows it. With `money.approvals: 2` a two-person action (202).',
    tag: 'accounts',
    params: [ACCOUNT_ID],
    body: WalletRequest,
    answers: [ok('The account', { AccountChange }), PENDING_APPROVAL],
    errors: ['svc_not_found'],
  }),
  admin('delete', {
    path: '/_admin/v1/accounts/{id}/wallet',
    operationId: 'detachAccountWallet',
    summary: "Detach the account's payout wallet",
    description: 'With `money.approvals: 2` a two-person action (202).',
    tag: 'accounts',
    params: [ACCOUNT_ID],
    answers: [ok('The account', { AccountChange }), PENDING_APPROVAL],
    errors: ['svc_not_found'],
  }),
];
