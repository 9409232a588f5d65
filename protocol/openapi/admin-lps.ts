/**
 * The admin API's liquidity providers: who owns the pool's capital, in shares, and the
 * withdrawal queue (docs/money.md, "Pool capital"). Part of control's document (`admin.ts`).
 * Every operation is the `money` scope's, reads included; the changes are two-person actions
 * with `money.approvals: 2` (202).
 */
import { z } from 'zod';
import {
  CreateLpRequest,
  LpDepositRequest,
  LpDepositView,
  LpDetail,
  LpList,
  LpView,
  WithdrawRequest,
  WithdrawalList,
  WithdrawalListQuery,
  WithdrawalView,
} from '../lps';
import { PENDING_APPROVAL } from './admin-money';
import type { Operation } from './operation';
import { admin, created, ok } from './admin-op';
import { pathParam } from './common';

const LP_ID = pathParam('id', 'the provider’s id (`lp_…`, or `operator`) or its name');
const WITHDRAWAL_ID = pathParam(
  'id',
  'the withdrawal’s id (an integer from 1; anything else is 404)',
  z.int().min(1).max(999_999_999_999_999),
);
const TWO_PERSON = 'With `money.approvals: 2` a two-person action (202).';

export const LP_OPERATIONS: readonly Operation[] = [
  admin('get', {
    path: '/_admin/v1/lps',
    operationId: 'listLps',
    summary: 'Every liquidity provider’s position, by name, and the pool’s capital',
    description:
      'Each position: its shares, their value now (shares × capital ÷ shares outstanding, rounded down), what it deposited and was paid by withdrawals, its gain, and what its pending withdrawals still ask for. The built-in provider `operator` holds what `pool fund` put in.',
    tag: 'lps',
    answers: [ok('The providers and the pool’s capital', { LpList })],
  }),
  admin('post', {
    path: '/_admin/v1/lps',
    operationId: 'addLp',
    summary: 'Add a liquidity provider',
    description: `It holds no shares until its first deposit. 409 \`svc_conflict\` (\`reason: name_taken\`) when the name is taken. ${TWO_PERSON}`,
    tag: 'lps',
    body: CreateLpRequest,
    answers: [created('The provider', { LpView }), PENDING_APPROVAL],
    errors: ['svc_conflict'],
  }),
  admin('get', {
    path: '/_admin/v1/lps/{id}',
    operationId: 'getLp',
    summary: 'One liquidity provider: its position, its withdrawals and its share events',
    description: 'Withdrawals and share events newest first, at most 100 each.',
    tag: 'lps',
    params: [LP_ID],
    answers: [ok('The provider', { LpDetail })],
    errors: ['svc_not_found'],
  }),
  admin('post', {
    path: '/_admin/v1/lps/{id}/deposit',
    operationId: 'depositIntoLp',
    summary: 'Deposit into a provider’s position (external → pool), once per reference',
    description: `Mints the provider's shares at the value a share has then (rounded down; 409 \`svc_conflict\`, \`reason: mints_nothing\`, when that is none). The same \`reference\` with the same provider and amount again answers 200 with the first deposit (\`created: false\`) and moves nothing; with another provider or amount it is 409 \`svc_conflict\` (\`reason: reference_used\`). ${TWO_PERSON}`,
    tag: 'lps',
    params: [LP_ID],
    body: LpDepositRequest,
    answers: [
      created('Deposited: the transfer, the shares minted and the position', { LpDepositView }),
      ok('The reference was recorded before, with this provider and amount: the first deposit, nothing moved', { LpDepositView }),
      PENDING_APPROVAL,
    ],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
  admin('post', {
    path: '/_admin/v1/lps/{id}/withdrawals',
    operationId: 'requestLpWithdrawal',
    summary: 'Request a withdrawal from a provider’s position',
    description: `An \`amount\`, or \`all: true\` for the whole position at its value when each payment is made. It is due once \`pool.withdrawalNoticeH\` has passed, then paid from free capital (capital less what the exposure locks), oldest due first, in part while free capital is short. 409 \`svc_conflict\` (\`reason: over_position\`, \`field: amount\`) when it asks for more than the position is worth less what its pending withdrawals ask for, or after a whole-position request. ${TWO_PERSON}`,
    tag: 'lps',
    params: [LP_ID],
    body: WithdrawRequest,
    answers: [created('The withdrawal, pending', { WithdrawalView }), PENDING_APPROVAL],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
  admin('get', {
    path: '/_admin/v1/lp-withdrawals',
    operationId: 'listLpWithdrawals',
    summary: 'The withdrawal queue, oldest first, and the pool’s capital',
    description: 'At most 1000. 404 `svc_not_found` (`field: provider`) for an unknown provider.',
    tag: 'lps',
    query: WithdrawalListQuery,
    answers: [ok('The withdrawals and the pool’s capital', { WithdrawalList })],
    errors: ['svc_not_found'],
  }),
  admin('post', {
    path: '/_admin/v1/lp-withdrawals/{id}/cancel',
    operationId: 'cancelLpWithdrawal',
    summary: 'Cancel a pending withdrawal',
    description: `What was paid of it stays paid. 409 \`svc_conflict\` (\`reason: not_pending\`) when it was paid or cancelled already. ${TWO_PERSON}`,
    tag: 'lps',
    params: [WITHDRAWAL_ID],
    answers: [ok('The withdrawal, cancelled', { WithdrawalView }), PENDING_APPROVAL],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
];
