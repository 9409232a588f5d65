/**
 * Two people for money: with `money.approvals: 2`, funding the pool, marking a payout paid,
 * depositing into an account, setting or clearing an account's refill rule, rotating the
 * receipt signing key, attaching or detaching an account's payout wallet (through the account or one of its keys), and adding an
 * operator who gets `money` or `operators` (or rotating another operator's token who holds
 * one: the new token is a second identity) do not act when one operator asks. The request is
 * recorded as pending (`202`, {@link ApprovalView}); a second operator holding the scopes
 * {@link approverScopes} names approves it (then it acts, as the requester, with both names in
 * its audit row) or rejects it; after {@link APPROVAL_TTL_MS} it expires. The requester cannot
 * approve their own request.
 */
import { z } from 'zod';
import { AccountChange, DepositRequest, DepositView, RefillAction, RefillChange } from './accounts';
import { KeyChange, WalletRequest } from './admin';
import {
  AddOperatorRequest,
  IssuedOperatorToken,
  OperatorName,
  OperatorScopeSchema,
  RotateOperatorRequest,
  RotatedOperatorToken,
} from './operators';
import { FundPoolRequest, FundView, MarkPaidRequest, MarkPaidView } from './settlement';
import { CreateLpRequest, LpDepositRequest, LpDepositView, LpView, WITHDRAW_FIELDS, WithdrawalView, oneOfAmountOrAll } from './lps';
import { RotateKeyView } from './receipts';
import type { OperatorScope } from './scopes';
import { plainString } from './text';
import { IsoTime } from './wire';

/**
 * The actions two operators must agree on (with `money.approvals: 2`), by their audit action
 * names: docs/operators.md's list of two-person actions ("Running svc as a team") is this one.
 * `operators.add` is one only when the new operator gets a scope of {@link TWO_PERSON_GRANTS};
 * `operators.rotate` only when another operator's token is rotated and that operator holds one.
 */
export const MONEY_ACTIONS = [
  'pool.fund',
  'payouts.mark_paid',
  'receipts.rotate_key',
  'keys.wallet.attach',
  'keys.wallet.detach',
  'accounts.deposit',
  'accounts.wallet.attach',
  'accounts.wallet.detach',
  'accounts.refill.set',
  'accounts.refill.clear',
  'operators.add',
  'operators.rotate',
  'lps.add',
  'lps.deposit',
  'lps.withdraw',
  'lps.cancel',
] as const;
export type MoneyAction = (typeof MONEY_ACTIONS)[number];

/** The scope of the route that asks for each action: its requester holds it, and so does whoever decides it. */
export const MONEY_ACTION_SCOPES: Readonly<Record<MoneyAction, OperatorScope>> = {
  'pool.fund': 'money',
  'payouts.mark_paid': 'money',
  'receipts.rotate_key': 'receipts',
  'keys.wallet.attach': 'money',
  'keys.wallet.detach': 'money',
  'accounts.deposit': 'money',
  'accounts.wallet.attach': 'money',
  'accounts.wallet.detach': 'money',
  'accounts.refill.set': 'money',
  'accounts.refill.clear': 'money',
  'operators.add': 'operators',
  'operators.rotate': 'operators',
  'lps.add': 'money',
  'lps.deposit': 'money',
  'lps.withdraw': 'money',
  'lps.cancel': 'money',
};

/**
 * The scopes whose grant is itself a two-person action: an operator holding `money` is the
 * second person of every money action, and one holding `operators` can add such operators.
 */
export const TWO_PERSON_GRANTS: readonly OperatorScope[] = ['money', 'operators'];

/** A deposit into an account, as the request records it: the account's id, the amount and the reference. */
export const DepositAction = z.strictObject({ id: z.string().min(1), ...DepositRequest.shape });

export const LpDepositAction = z.strictObject({ id: z.string().min(1), ...LpDepositRequest.shape });
export const WithdrawAction = z.strictObject({ id: z.string().min(1), ...WITHDRAW_FIELDS }).superRefine(oneOfAmountOrAll);

/** A wallet attached to a key's account (or, for `accounts.wallet.attach`, to the account), as the request records it: the key's (the account's) id and the wallet. */
export const WalletAttachAction = WalletRequest.extend({ id: z.string().min(1) }).strict();
/** A wallet detached from a key's account (or from the account), or an account's refill rule cleared: the key's (the account's) id. */
export const WalletDetachAction = z.object({ id: z.string().min(1) }).strict();

/** Another operator's token rotated, as the request records it: its name and its scopes when asked, and the grace. */
export const RotateOperatorAction = RotateOperatorRequest.extend({ name: OperatorName, scopes: z.array(OperatorScopeSchema) }).strict();

/** The request each action records, validated again when it is approved. Never a token: one is made when the action runs. */
export const MONEY_ACTION_REQUESTS = {
  'pool.fund': FundPoolRequest,
  'payouts.mark_paid': MarkPaidRequest,
  'receipts.rotate_key': z.object({}).strict(),
  'keys.wallet.attach': WalletAttachAction,
  'keys.wallet.detach': WalletDetachAction,
  'accounts.deposit': DepositAction,
  'accounts.wallet.attach': WalletAttachAction,
  'accounts.wallet.detach': WalletDetachAction,
  'accounts.refill.set': RefillAction,
  'accounts.refill.clear': WalletDetachAction,
  'operators.add': AddOperatorRequest,
  'operators.rotate': RotateOperatorAction,
  'lps.add': CreateLpRequest,
  'lps.deposit': LpDepositAction,
  'lps.withdraw': WithdrawAction,
  'lps.cancel': z.strictObject({ id: z.number().int().min(1) }),
} as const satisfies Record<MoneyAction, z.ZodType>;

/**
 * The scopes an operator needs to approve a request, and its requester must still hold when it
 * is approved: the action's own scope and, for an operator added or rotated, every scope that
 * operator holds (no one grants, or takes over, a scope they do not hold).
 */
export function approverScopes(action: MoneyAction, request: Record<string, unknown>): OperatorScope[] {
  const own = MONEY_ACTION_SCOPES[action];
  if (action !== 'operators.add' && action !== 'operators.rotate') return [own];
  const granted = Array.isArray(request.scopes) ? (request.scopes as OperatorScope[]) : [];
  return [...new Set([own, ...granted])];
}

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
  /** What it acts on: `pool`, the payout's wallet, the key's id, the account's id, the new operator's name, or null for a key rotation. */
  target: z.string().nullable(),
  /** The request as asked: the body of the route that asked, with the key's or the account's `id` for a wallet or a deposit. */
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
  /**
   * The action's own answer, as it would have been without approvals (`pool fund`, `payouts
   * mark-paid`, `accounts deposit`, `accounts refill`, `receipts rotate-key`, `keys wallet`,
   * `accounts wallet`, `operators add`, `operators rotate`, `lps add|deposit|withdraw|cancel`). For
   * an operator added or rotated, this is the one place its new token appears: made when the
   * request is approved, answered to the approver only, and stored as its SHA-256.
   */
  result: z.union([
    FundView,
    MarkPaidView,
    DepositView,
    RotateKeyView,
    KeyChange,
    RefillChange,
    AccountChange,
    IssuedOperatorToken,
    RotatedOperatorToken,
    LpView,
    LpDepositView,
    WithdrawalView,
  ]),
});
export type ApprovedView = z.infer<typeof ApprovedView>;
