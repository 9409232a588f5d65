/** The admin API's approvals: two-person actions waiting for a second operator. Part of control's document (`admin.ts`). */
import { ApprovalList, ApprovalListQuery, ApprovalView, ApprovedView, RejectApprovalRequest } from '../approvals';
import type { Operation } from './operation';
import { admin, ok } from './admin-op';
import { pathParam } from './common';

const APPROVAL_ID = pathParam('id', 'the request’s id (`apr_…`)');
const DECIDING =
  'Approving needs the scope of the request’s action (`money` for pool funding, payouts and a key’s wallet, `receipts` for a receipt key rotation, `operators` for an operator added) and, for an operator added, every scope it is granted; rejecting needs the action’s scope (403 `svc_forbidden_scope` naming the scope missing). 409 `svc_conflict` when the request was decided already (`reason: decided`) or expired (`reason: expired`).';

export const APPROVAL_OPERATIONS: readonly Operation[] = [
  admin('get', {
    path: '/_admin/v1/approvals',
    operationId: 'listApprovals',
    summary: 'Two-person actions asked for with `money.approvals: 2`, newest first, in every state',
    tag: 'operators',
    query: ApprovalListQuery,
    answers: [ok('Requests', { ApprovalList })],
  }),
  admin('get', {
    path: '/_admin/v1/approvals/{id}',
    operationId: 'getApproval',
    summary: 'One request',
    tag: 'operators',
    params: [APPROVAL_ID],
    answers: [ok('The request', { ApprovalView })],
    errors: ['svc_not_found'],
  }),
  admin('post', {
    path: '/_admin/v1/approvals/{id}/approve',
    operationId: 'approveApproval',
    summary: 'Approve a pending request: the action happens now, as its requester asked it, with both names in its audit row',
    description: `${DECIDING} The requester cannot approve their own request (409, \`reason: self_approval\`), nor approve one whose requester is no longer active (409, \`reason: requester_inactive\`) or no longer holds those scopes (409, \`reason: requester_scope\`). The action's own errors (a ledger rule, an operator's name taken meanwhile: 409) leave the request pending. For an operator added, \`result\` holds the new operator's token: made now, shown in this answer only.`,
    tag: 'operators',
    params: [APPROVAL_ID],
    answers: [ok('The request, approved, and the action’s answer', { ApprovedView })],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
  admin('post', {
    path: '/_admin/v1/approvals/{id}/reject',
    operationId: 'rejectApproval',
    summary: 'Reject a pending request (its requester may withdraw it), with an optional reason',
    description: DECIDING,
    tag: 'operators',
    params: [APPROVAL_ID],
    body: RejectApprovalRequest,
    optionalBody: true,
    answers: [ok('The request, rejected', { ApprovalView })],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
];
