/** `/_admin/v1/changelog` (operator notices) and `/_admin/v1/audit` (read-only). */
import {
  ADMIN_CHANGELOG_DEFAULT_LIMIT,
  ADMIN_CHANGELOG_MAX_LIMIT,
  AUDIT_DEFAULT_LIMIT,
  AUDIT_MAX_LIMIT,
  AddChangelogRequest,
  type AuditList,
  type ChangelogEntry,
  type ChangelogList,
} from '../../protocol/admin';
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../protocol/http';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';

export function limitParam(query: URLSearchParams, fallback: number, max: number): number {
  const raw = query.get('limit');
  if (raw === null) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new SvcError('svc_bad_request', `limit must be an integer from 1 to ${max}`, {
      extra: { errors: [{ field: 'limit', message: `must be an integer from 1 to ${max}` }] },
    });
  }
  return n;
}

export function registerChangelogRoutes(router: Router, ctx: ControlContext): void {
  router.get('/_admin/v1/changelog', { query: ['limit'] }, async ({ res, query }) => {
    sendJson(res, 200, {
      entries: await ctx.store.changelog.list(limitParam(query, ADMIN_CHANGELOG_DEFAULT_LIMIT, ADMIN_CHANGELOG_MAX_LIMIT)),
    } satisfies ChangelogList);
  });

  router.post('/_admin/v1/changelog', async ({ req, res, actor }) => {
    const input = parseBody(AddChangelogRequest, await readJson(req));
    const now = ctx.now();
    const { result: id } = await ctx.store.mutate({ actor, now }, { action: 'changelog.add', detail: { text: input.text } }, (tx) =>
      tx.changelog.add({ at: now, kind: 'notice', text: input.text, author: actor }),
    );
    sendJson(res, 201, (await ctx.store.changelog.byId(id)) satisfies ChangelogEntry | undefined);
  });

  router.get('/_admin/v1/audit', { query: ['limit'] }, async ({ res, query }) => {
    sendJson(res, 200, {
      entries: await ctx.store.audit.list(limitParam(query, AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT)),
    } satisfies AuditList);
  });
}
