/** The admin API's money operations: settler, pool, ledger, payouts, receipt key and reissue. Part of control's document (`admin.ts`). */
import { ApprovalView } from '../approvals';
import { ReissueView, RotateKeyView } from '../receipts';
import {
  BalancesQuery,
  BalancesView,
  FundPoolRequest,
  FundView,
  LedgerVerifyView,
  MarkPaidRequest,
  MarkPaidView,
  PayoutsQuery,
  PayoutsView,
  PoolPauseRequest,
  PoolPauseView,
  PoolView,
  RunOnceView,
  SettlerStatus,
} from '../settlement';
import type { Answer, Operation } from './operation';
import { admin, created, ok } from './admin-op';
import { BATCH_NUMBER_PARAM, pathParam } from './common';

/** The answer of a two-person action when `money.approvals` is 2: the pending request. */
export const PENDING_APPROVAL: Answer = {
  status: 202,
  description:
    'With `money.approvals: 2`: nothing happened yet; the request waits (24 h at most) for a second operator holding the scopes it needs (`/_admin/v1/approvals/{id}/approve`)',
  json: { ApprovalView },
};

export const MONEY_OPERATIONS: readonly Operation[] = [
  admin('get', {
    path: '/_admin/v1/settler',
    operationId: 'getSettler',
    summary: 'The settler',
    tag: 'money',
    answers: [ok('State, backlog, last batch', { SettlerStatus })],
  }),
  admin('post', {
    path: '/_admin/v1/settler/pause',
    operationId: 'pauseSettler',
    summary: 'Pause the settler (kept across restarts)',
    tag: 'money',
    answers: [ok('The settler', { SettlerStatus })],
  }),
  admin('post', {
    path: '/_admin/v1/settler/resume',
    operationId: 'resumeSettler',
    summary: 'Resume the settler',
    description: '409 `svc_settler_halted` while a settled batch has no receipt.',
    tag: 'money',
    answers: [ok('The settler', { SettlerStatus })],
    errors: ['svc_settler_halted'],
  }),
  admin('post', {
    path: '/_admin/v1/settler/run-once',
    operationId: 'runSettlerOnce',
    summary: 'Settle everything received so far, also while paused',
    description: '409 `svc_settler_halted` while a settled batch has no receipt.',
    tag: 'money',
    answers: [ok('What the run settled', { RunOnceView })],
    errors: ['svc_settler_halted'],
  }),
  admin('get', {
    path: '/_admin/v1/pool',
    operationId: 'getPool',
    summary: 'The coverage pool',
    tag: 'money',
    answers: [ok('Balance, inflows, refunds, shortfall', { PoolView })],
  }),
  admin('post', {
    path: '/_admin/v1/pool/fund',
    operationId: 'fundPool',
    summary: 'Fund the pool (external → pool)',
    tag: 'money',
    body: FundPoolRequest,
    answers: [created('Funded', { FundView }), PENDING_APPROVAL],
  }),
  admin('post', {
    path: '/_admin/v1/pool/pause',
    operationId: 'pausePool',
    summary: 'Pause coverage: calls go on, uncovered (no premium, no refund), until resumed',
    description:
      'Takes effect at once (never two-person). Kept in the database across restarts and shared by every control on it; audited (`pool.pause`, with the note) and announced in the public changelog (`Coverage paused: <note>`). Already paused: 200 with `changed: false`, nothing written.',
    tag: 'money',
    body: PoolPauseRequest,
    answers: [ok('Coverage paused (or already paused)', { PoolPauseView })],
  }),
  admin('post', {
    path: '/_admin/v1/pool/resume',
    operationId: 'resumePool',
    summary: 'Resume coverage after a manual pause',
    description:
      'Audited (`pool.resume`, with the note) and announced in the public changelog (`Coverage resumed: <note>`). Not paused: 200 with `changed: false`, nothing written.',
    tag: 'money',
    body: PoolPauseRequest,
    answers: [ok('Coverage resumed (or was not paused)', { PoolPauseView })],
  }),
  admin('get', {
    path: '/_admin/v1/ledger/verify',
    operationId: 'verifyLedger',
    summary: 'Check every ledger invariant',
    tag: 'money',
    answers: [ok('The first broken invariant, if any', { LedgerVerifyView })],
  }),
  admin('get', {
    path: '/_admin/v1/ledger/balances',
    operationId: 'listBalances',
    summary: 'Account balances',
    tag: 'money',
    query: BalancesQuery,
    answers: [ok('Balances', { BalancesView })],
  }),
  admin('get', {
    path: '/_admin/v1/payouts',
    operationId: 'listPayouts',
    summary: 'What each wallet is owed',
    tag: 'money',
    query: PayoutsQuery,
    answers: [ok('Payouts', { PayoutsView })],
  }),
  admin('post', {
    path: '/_admin/v1/payouts/mark-paid',
    operationId: 'markPaid',
    summary: 'Record a payment made outside svc (account → external, oldest account first)',
    tag: 'money',
    body: MarkPaidRequest,
    answers: [created('Recorded', { MarkPaidView }), PENDING_APPROVAL],
    errors: ['svc_conflict'],
  }),
  admin('post', {
    path: '/_admin/v1/receipts/rotate-key',
    operationId: 'rotateReceiptKey',
    summary: 'Sign receipts with a new key from the next batch on',
    description: 'Earlier public keys stay published in `/api/receipts/keys`; the private key appears in no answer.',
    tag: 'money',
    answers: [ok('The new key id and every published one', { RotateKeyView }), PENDING_APPROVAL],
  }),
  admin('post', {
    path: '/_admin/v1/receipts/{batch}/reissue',
    operationId: 'reissueReceipt',
    summary: 'Sign a settled batch that has no receipt again',
    description:
      'From its rows as they are now, with the current key, chained to the receipt before it; recorded in the audit log and the public changelog. Lifts the settler halt when no other settled batch lacks its receipt. 404 `svc_not_found` for a batch that does not exist; 409 `svc_conflict` for one that has its receipt or comes after a batch without one.',
    tag: 'money',
    params: [pathParam('batch', 'the batch number (from 1)', BATCH_NUMBER_PARAM)],
    answers: [ok('The new receipt, its changelog entry and the settler halt afterwards', { ReissueView })],
    errors: ['svc_bad_request', 'svc_not_found', 'svc_conflict'],
  }),
];
