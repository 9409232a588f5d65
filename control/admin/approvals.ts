/**
 * `/_admin/v1/approvals`: the two-person actions waiting for a second operator
 * (money-actions.ts, `money.approvals: 2`).
 *
 * - `GET` lists them, newest first (`?status=` to keep one state); `GET {id}` shows one.
 * - `POST {id}/approve`: an operator other than the requester, holding the scopes the request
 *   needs (`approverScopes`: the action's own scope, `money`, `receipts` for a key rotation or
 *   `operators` for an operator added, and for an operator added every scope it is granted),
 *   makes the action happen as it was asked. 409 `svc_conflict` when the request is decided or
 *   expired (`reason`: `decided`, `expired`), when the approver is the requester
 *   (`self_approval`) or when the requester no longer holds a working token
 *   (`requester_inactive`) or those scopes (`requester_scope`); 403 `svc_forbidden_scope`
 *   without one of those scopes, naming it.
 * - `POST {id}/reject`: an operator holding the action's scope (the requester too: withdrawing)
 *   rejects it, with an optional reason.
 */
import {
  ApprovalListQuery,
  MONEY_ACTION_SCOPES,
  RejectApprovalRequest,
  approverScopes,
  type ApprovalList,
  type ApprovalView,
  type ApprovedView,
} from '../../protocol/approvals';
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../runtime/http';
import type { ControlContext } from '../context';
import type { RequestContext, Router } from '../http/router';
import { parseBody } from '../http/validate';
import { approvalStatus, type ApprovalRow } from '../store/approvals';
import { operatorScopes, operatorStatus } from '../store/operators';
import { approvalView, runApproved } from './money-actions';

/** The request as it was recorded. */
const requestOf = (row: ApprovalRow): Record<string, unknown> => JSON.parse(row.detail) as Record<string, unknown>;

async function approvalOrNotFound(ctx: ControlContext, id: string): Promise<ApprovalRow> {
  const row = await ctx.store.approvals.byId(id);
  if (row === undefined) throw new SvcError('svc_not_found', `no approval request ${id}`);
  return row;
}

/** 409 unless the request can still be decided at `now`. */
function stillPending(row: ApprovalRow, now: number): void {
  const status = approvalStatus(row, now);
  if (status === 'pending') return;
  const why =
    status === 'expired'
      ? `expired at ${new Date(row.expires_at).toISOString()}; ask again`
      : `was ${status} by ${row.decided_by ?? 'another operator'} at ${new Date(row.decided_at ?? 0).toISOString()}`;
  throw new SvcError('svc_conflict', `approval request ${row.id} ${why}`, {
    extra: { reason: status === 'expired' ? 'expired' : 'decided' },
  });
}

/** 403 `svc_forbidden_scope` unless the caller holds every scope deciding the request needs (the action's own to reject). */
function holdsActionScope(row: ApprovalRow, caller: Pick<RequestContext, 'actor' | 'scopes'>, verb: 'approve' | 'reject'): void {
  const needed = verb === 'reject' ? [MONEY_ACTION_SCOPES[row.action]] : approverScopes(row.action, requestOf(row));
  const scope = needed.find((s) => !caller.scopes.has(s));
  if (scope === undefined) return;
  throw new SvcError(
    'svc_forbidden_scope',
    `to ${verb} a ${row.action} request needs the scope ${scope}; operator ${caller.actor} lacks it`,
    {
      extra: { scope },
    },
  );
}

/** The claim that marks the request decided inside the action's transaction; 409 when someone decided first. */
function decided(row: ApprovalRow, now: number): SvcError {
  return new SvcError(
    'svc_conflict',
    `approval request ${row.id} was decided by another operator at the same time, or expired (${new Date(now).toISOString()})`,
    {
      extra: { reason: 'decided' },
    },
  );
}

export function registerApprovalRoutes(router: Router, ctx: ControlContext): void {
  router.get('/_admin/v1/approvals', { query: ['status'] }, async ({ res, query }) => {
    const { status } = parseBody(ApprovalListQuery, Object.fromEntries(query));
    const now = ctx.now();
    const approvals = (await ctx.store.approvals.list())
      .map((row) => approvalView(row, now))
      .filter((a) => status === undefined || a.status === status);
    sendJson(res, 200, { approvals } satisfies ApprovalList);
  });

  router.get('/_admin/v1/approvals/:id', async ({ res, params }) => {
    sendJson(res, 200, approvalView(await approvalOrNotFound(ctx, params.id!), ctx.now()) satisfies ApprovalView);
  });

  router.post('/_admin/v1/approvals/:id/approve', async ({ req, res, params, actor, scopes }) => {
    req.resume();
    const row = await approvalOrNotFound(ctx, params.id!);
    stillPending(row, ctx.now());
    holdsActionScope(row, { actor, scopes }, 'approve');
    if (row.requested_by === actor) {
      throw new SvcError(
        'svc_conflict',
        `operator ${actor} asked for this ${row.action} and cannot approve it too; another operator holding ${approverScopes(row.action, requestOf(row)).join(', ')} must`,
        { extra: { reason: 'self_approval' } },
      );
    }
    const requester = await ctx.store.operators.byName(row.requested_by);
    if (requester === undefined || operatorStatus(requester, ctx.now()) !== 'active') {
      throw new SvcError(
        'svc_conflict',
        `operator ${row.requested_by}, who asked for this ${row.action}, is no longer active; reject it and ask again`,
        {
          extra: { reason: 'requester_inactive' },
        },
      );
    }
    const lacking = approverScopes(row.action, requestOf(row)).find((s) => !operatorScopes(requester).includes(s));
    if (lacking !== undefined) {
      throw new SvcError(
        'svc_conflict',
        `operator ${row.requested_by}, who asked for this ${row.action}, no longer holds the scope ${lacking}; reject it`,
        { extra: { reason: 'requester_scope' } },
      );
    }
    const result = await runApproved(
      ctx,
      row.action,
      row.detail,
      { actor: row.requested_by, tokenId: row.requested_token_id, approvedBy: actor },
      async (tx) => {
        const now = ctx.now();
        if (!(await tx.approvals.decide({ id: row.id, status: 'approved', by: actor, now, reason: null }))) throw decided(row, now);
      },
    );
    const body: ApprovedView = { approval: approvalView(await approvalOrNotFound(ctx, row.id), ctx.now()), result };
    sendJson(res, 200, body);
  });

  router.post('/_admin/v1/approvals/:id/reject', async ({ req, res, params, actor, tokenId, scopes }) => {
    const input = parseBody(RejectApprovalRequest, await readJson(req));
    const row = await approvalOrNotFound(ctx, params.id!);
    const now = ctx.now();
    stillPending(row, now);
    holdsActionScope(row, { actor, scopes }, 'reject');
    const reason = input.reason ?? null;
    await ctx.store.mutate(
      { actor, tokenId, now },
      { action: 'approvals.reject', target: row.id, detail: { action: row.action, reason } },
      async (tx) => {
        if (!(await tx.approvals.decide({ id: row.id, status: 'rejected', by: actor, now, reason }))) throw decided(row, now);
      },
    );
    sendJson(res, 200, approvalView(await approvalOrNotFound(ctx, row.id), ctx.now()) satisfies ApprovalView);
  });
}
