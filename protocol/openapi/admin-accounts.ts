/** The admin API's accounts: who holds prepaid money. Part of control's document (`admin.ts`). */
import { AccountChange, AccountList, AccountListQuery, AccountView, CreateAccountRequest } from '../accounts';
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
];
