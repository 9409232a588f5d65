/** `/_admin/v1/changelog` (operator notices) and `/_admin/v1/audit` (read-only). */
import {
  ADMIN_CHANGELOG_DEFAULT_LIMIT,
  ADMIN_CHANGELOG_MAX_LIMIT,
  AUDIT_DEFAULT_LIMIT,
  AddChangelogRequest,
  AuditQuery,
  type AuditList,
  type ChangelogEntry,
  type ChangelogList,
} from '../../protocol/admin';
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../runtime/http';
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

/** `next_cursor` of the audit log: the id of a page's last row, base64url-encoded (opaque to clients). */
export const encodeAuditCursor = (id: number): string => Buffer.from(`a${id}`, 'utf8').toString('base64url');

/** The id in a `cursor` this API issued, or null when it is not one. */
export function decodeAuditCursor(token: string): number | null {
  if (!/^[A-Za-z0-9_-]{2,24}$/.test(token)) return null;
  const match = /^a([1-9][0-9]{0,15})$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  return match === null || !Number.isSafeInteger(Number(match[1])) ? null : Number(match[1]);
}

/** One page of the audit log (`GET /_admin/v1/audit`), newest first, from its query parameters. */
export async function listAudit(ctx: ControlContext, query: URLSearchParams): Promise<AuditList> {
  const q = parseBody(AuditQuery, Object.fromEntries(query));
  let before: number | undefined;
  if (q.cursor !== undefined) {
    const id = decodeAuditCursor(q.cursor);
    if (id === null) {
      const message = 'is not a next_cursor from a previous page';
      throw new SvcError('svc_bad_request', `cursor: ${message}`, { extra: { errors: [{ field: 'cursor', message }] } });
    }
    before = id;
  }
  const limit = q.limit ?? AUDIT_DEFAULT_LIMIT;
  // One row more than the page: whether there is a next page, without an empty last one.
  const rows = await ctx.store.audit.page({
    limit: limit + 1,
    ...(q.operator !== undefined ? { operator: q.operator } : {}),
    ...(q.action !== undefined ? { action: q.action } : {}),
    ...(q.since !== undefined ? { since: Date.parse(q.since) } : {}),
    ...(before !== undefined ? { before } : {}),
  });
  const entries = rows.slice(0, limit);
  return { entries, next_cursor: rows.length > limit ? encodeAuditCursor(entries[entries.length - 1]!.id) : null };
}

export function registerChangelogRoutes(router: Router, ctx: ControlContext): void {
  router.get('/_admin/v1/changelog', { query: ['limit'] }, async ({ res, query }) => {
    sendJson(res, 200, {
      entries: await ctx.store.changelog.list(limitParam(query, ADMIN_CHANGELOG_DEFAULT_LIMIT, ADMIN_CHANGELOG_MAX_LIMIT)),
    } satisfies ChangelogList);
  });

  router.post('/_admin/v1/changelog', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(AddChangelogRequest, await readJson(req));
    const now = ctx.now();
    const { result: id } = await ctx.store.mutate(
      { actor, tokenId, now },
      { action: 'changelog.add', detail: { text: input.text } },
      (tx) => tx.changelog.add({ at: now, kind: 'notice', text: input.text, author: actor }),
    );
    sendJson(res, 201, (await ctx.store.changelog.byId(id)) satisfies ChangelogEntry | undefined);
  });

  router.get('/_admin/v1/audit', { query: ['operator', 'action', 'since', 'limit', 'cursor'] }, async ({ res, query }) => {
    sendJson(res, 200, await listAudit(ctx, query));
  });
}
