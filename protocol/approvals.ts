/**
 * Two people for money: with `money.approvals: 2`, funding the pool, marking a payout paid and
 * rotating the receipt signing key do not act when one operator asks. The request is recorded as
 * pending (`202`, {@link ApprovalView}); a second operator holding the action's own scope
 * approves it (then it acts, as the requester, with both names in its audit row) or rejects it;
 * after {@link APPROVAL_TTL_MS} it expires. The requester cannot approve their own request.
 */
import { z } from 'zod';
import { FundPoolRequest, FundView, MarkPaidRequest, MarkPaidView } from './settlement';
import { RotateKeyView } from './receipts';
import type { OperatorScope } from './scopes';
import { plainString } from './text';
import { IsoTime } from './wire';

/** The actions two operators must agree on (with `money.approvals: 2`), by their audit action names. */
export const MONEY_ACTIONS = ['pool.fund', 'payouts.mark_paid', 'receipts.rotate_key'] as const;
export type MoneyAction = (typeof MONEY_ACTIONS)[number];

/** The scope each money action needs, of the operator who asks and of the one who approves. */
export const MONEY_ACTION_SCOPES: Readonly<Record<MoneyAction, OperatorScope>> = {
  'pool.fund': 'money',
  'payouts.mark_paid': 'money',
  'receipts.rotate_key': 'receipts',
};

/** The request each action records, validated again when it is approved. */
export const MONEY_ACTION_REQUESTS = {
  'pool.fund': FundPoolRequest,
  'payouts.mark_paid': MarkPaidRequest,
  'receipts.rotate_key': z.object({}).strict(),
} as const satisfies Record<MoneyAction, z.ZodType>;

/** How long a pending request waits for its second operator: 24 h. */
export const APPROVAL_TTL_MS = 24 * 3_600_000;

/** Approval ids: `apr_` and 12 base58 characters. */
export const APPROVAL_ID_PATTERN = /^apr_[1-9A-HJ-NP-Za-km-z]{12}$/;

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired'] as const;
export const ApprovalStatus = z.enum(APPROVAL_STATUSES);
export type ApprovalStatus = z.infer<typeof ApprovalStatus>;

/** A request for a money action, as `GET /_admin/v1/approvals` lists it and a `202` answers it. */
export const ApprovalView = z.strictObject({
  id: z.string().describe('`apr_…`'),
  status: ApprovalStatus,
  action: z.enum(MONEY_ACTIONS),
  /** What it acts on: `pool`, the payout's wallet, or null for a key rotation. */
  target: z.string().nullable(),
  /** The request as asked (the body of the route that asked). */
  detail: z.record(z.string(), z.unknown()),
  requested_by: z.string(),
  requested_at: IsoTime,
  expires_at: IsoTime,
  /** Who approved or rejected it; null while pending or once expired. */
  decided_by: z.string().nullable(),
  decided_at: IsoTime.nullable(),
  /** Why it was rejected, when the rejecting operator said. */
  reason: z.string().nullable(),
});
export type ApprovalView = z.infer<typeof ApprovalView>;

export const ApprovalList = z.strictObject({ approvals: z.array(ApprovalView) });
export type ApprovalList = z.infer<typeof ApprovalList>;

/** Query of `GET /_admin/v1/approvals`. */
export const ApprovalListQuery = z.strictObject({
  status: ApprovalStatus.optional().describe('only requests in this state (default: every state, newest first)'),
});

/** `POST /_admin/v1/approvals/{id}/reject`: an optional reason, kept with the request and in the audit log. */
export const RejectApprovalRequest = z.object({ reason: plainString('text').trim().min(1).max(500).optional() }).strict();
export type RejectApprovalRequest = z.infer<typeof RejectApprovalRequest>;

/** `POST /_admin/v1/approvals/{id}/approve`: the request, now approved, and what the action answered. */
export const ApprovedView = z.strictObject({
  approval: ApprovalView,
  /** The action's own answer, as it would have been without approvals (`pool fund`, `payouts mark-paid`, `receipts rotate-key`). */
  result: z.union([FundView, MarkPaidView, RotateKeyView]),
});
export type ApprovedView = z.infer<typeof ApprovedView>;
