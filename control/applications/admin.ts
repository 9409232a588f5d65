/**
 * `/_admin/v1/applications`: operator review (docs/design.md §8). Every change goes through
 * `Store.mutate` and so is audited.
 *
 * | route | what |
 * |---|---|
 * | `GET /_admin/v1/applications[?status=pending&overdue=true&testers=true]` | review order: pending by priority, then oldest |
 * | `GET /_admin/v1/applications/{id}` | one application, its key and its delivery log |
 * | `POST /_admin/v1/applications` | `{"application":{…},"received_at"?}`: the direct-contact fallback (source `direct`) |
 * | `POST /_admin/v1/applications/{id}/approve` | `{"endpoints"?,"expires_in_seconds"?}`: issue a bound key and deliver it |
 * | `POST /_admin/v1/applications/{id}/reject` | `{"reason"?}` |
 * | `POST /_admin/v1/applications/{id}/redeliver` | `{"to_operator"?}`: a new secret for the key, delivered again |
 */
import {
  ANSWER_WITHIN_HOURS,
  APPLICATION_STATUSES,
  AddApplicationRequest,
  ApproveApplicationRequest,
  RedeliverApplicationRequest,
  RejectApplicationRequest,
  type ApplicationAdded,
  type ApplicationDetail,
  type ApplicationList,
  type ApplicationRejected,
  type ApplicationStatus,
  type ApprovalResult,
} from '../../protocol/applications';
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../runtime/http';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';
import { approveApplication, mustGetApplication, redeliverApplication, rejectApplication } from './decide';
import { submitApplication, validateApplication } from './intake';
import { applicationDetail, applicationView, listApplications } from './view';

/** How far back `received_at` of a direct application may go. @default 30 days */
export const DIRECT_BACKDATE_MAX_MS = 30 * 86_400_000;
/** Clock skew tolerated for a `received_at` slightly in the future. */
const FUTURE_SKEW_MS = 60_000;

const STATUSES: readonly ApplicationStatus[] = APPLICATION_STATUSES;

function badQuery(field: string, message: string): SvcError {
  return new SvcError('svc_bad_request', `${field}: ${message}`, { extra: { errors: [{ field, message }] } });
}

function boolParam(query: URLSearchParams, name: string): boolean {
  const raw = query.get(name);
  if (raw === null || raw === 'false' || raw === '0') return false;
  if (raw === '' || raw === 'true' || raw === '1') return true;
  throw badQuery(name, 'must be true or false');
}

export function registerApplicationAdminRoutes(router: Router, ctx: ControlContext): void {
  router.get('/_admin/v1/applications', { query: ['status', 'overdue', 'testers'] }, async ({ res, query }) => {
    const status = query.get('status');
    if (status !== null && !STATUSES.includes(status as ApplicationStatus))
      throw badQuery('status', `must be one of ${STATUSES.join(', ')}`);
    const body: ApplicationList = {
      applications: await listApplications(ctx, {
        ...(status !== null ? { status: status as ApplicationStatus } : {}),
        overdue: boolParam(query, 'overdue'),
        testers: boolParam(query, 'testers'),
      }),
      answer_within_hours: ANSWER_WITHIN_HOURS,
    };
    sendJson(res, 200, body);
  });

  router.get('/_admin/v1/applications/:id', async ({ res, params }) => {
    sendJson(res, 200, (await applicationDetail(ctx, await mustGetApplication(ctx, params.id!))) satisfies ApplicationDetail);
  });

  router.post('/_admin/v1/applications', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(AddApplicationRequest, await readJson(req));
    const app = validateApplication(input.application ?? {});
    const now = ctx.now();
    let receivedAt: number | undefined;
    if (input.received_at !== undefined) {
      receivedAt = Date.parse(input.received_at);
      if (receivedAt > now + FUTURE_SKEW_MS) throw badQuery('received_at', 'is in the future');
      if (receivedAt < now - DIRECT_BACKDATE_MAX_MS) throw badQuery('received_at', 'is more than 30 days ago');
      receivedAt = Math.min(receivedAt, now);
    }
    const { id, duplicate } = await submitApplication(ctx, app, {
      source: 'direct',
      by: { actor, tokenId },
      ...(receivedAt !== undefined ? { receivedAt } : {}),
    });
    sendJson(res, duplicate ? 200 : 201, {
      duplicate,
      application: applicationView(await mustGetApplication(ctx, id), ctx.now()),
    } satisfies ApplicationAdded);
  });

  router.post('/_admin/v1/applications/:id/approve', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(ApproveApplicationRequest, await readJson(req));
    sendJson(res, 200, (await approveApplication(ctx, { actor, tokenId }, params.id!, input)) satisfies ApprovalResult);
  });

  router.post('/_admin/v1/applications/:id/reject', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(RejectApplicationRequest, await readJson(req));
    const row = await rejectApplication(ctx, { actor, tokenId }, params.id!, input.reason ?? null);
    sendJson(res, 200, { application: applicationView(row, ctx.now()), version: await ctx.store.version() } satisfies ApplicationRejected);
  });

  router.post('/_admin/v1/applications/:id/redeliver', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(RedeliverApplicationRequest, await readJson(req));
    sendJson(
      res,
      200,
      (await redeliverApplication(ctx, { actor, tokenId }, params.id!, input.to_operator === true)) satisfies ApprovalResult,
    );
  });
}
