/**
 * `/_admin/v1/keys`: issue, list, show, revoke, rotate (with grace), lift, wallet. Issuing is
 * `../keys.ts` (the applications flow issues keys too). The plaintext key leaves control
 * once, in the body of the issue/rotate answer; the audit log gets the display stub only.
 */
import {
  IssueKeyRequest,
  KEY_LIST_DEFAULT_LIMIT,
  KeyListQuery,
  LiftKeyRequest,
  RotateKeyRequest,
  WalletRequest,
  type IssuedKey,
  type KeyChange,
  type KeyList,
  type KeyRevoked,
  type KeyView,
} from '../../protocol/admin';
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../runtime/http';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { pageCursor, parseBody } from '../http/validate';
import { issueKey, keyOrNotFound, keyView, newSecret, replaceSecrets, viewKey, viewKeyIn } from '../keys';
import { keyStatus, type KeyPosition, type KeyRow } from '../store/keys';
import { moneyAction } from './money-actions';
import { AlreadyDone, mutateUnlessDone } from '../mutation';

/**
 * `next_cursor` of the key list: the position (creation time, id) of the last key of a page,
 * base64url-encoded. Opaque to clients; the admin caller may see key ids anyway, so it is not
 * sealed.
 */
export function encodeKeyCursor(position: KeyPosition): string {
  return Buffer.from(`${position.created_at}.${position.id}`, 'utf8').toString('base64url');
}

const CURSOR_TOKEN = /^[A-Za-z0-9_-]{4,200}$/;
const CURSOR_POSITION = /^(0|[1-9][0-9]{0,15})\.([A-Za-z0-9_]{1,64})$/;

/** The position in a `cursor` this API issued, or null when it is not one. */
export function decodeKeyCursor(token: string): KeyPosition | null {
  if (!CURSOR_TOKEN.test(token)) return null;
  const match = CURSOR_POSITION.exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (match === null) return null;
  const createdAt = Number(match[1]);
  return Number.isSafeInteger(createdAt) ? { created_at: createdAt, id: match[2]! } : null;
}

/**
 * Keys read and rendered per synchronous step of a page. Between steps the event loop serves
 * other requests (a gateway's ack, an outcome batch), so a 1,000-key page never holds it for
 * more than a few milliseconds. @default 250
 */
export const KEY_LIST_STEP = 250;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * One page of the key list (`GET /_admin/v1/keys`), from its query parameters: read in steps of
 * {@link KEY_LIST_STEP} keys along the same keyset, yielding between steps. A step that comes
 * back short (the end, or a filter's bounded scan) ends the page.
 */
export async function listKeys(ctx: ControlContext, query: URLSearchParams): Promise<KeyList> {
  const q = parseBody(KeyListQuery, Object.fromEntries(query));
  let after: KeyPosition | null = pageCursor(q.cursor, decodeKeyCursor) ?? null;
  const limit = q.limit ?? KEY_LIST_DEFAULT_LIMIT;
  const now = ctx.now();
  const keys: KeyView[] = [];
  for (;;) {
    const step = Math.min(KEY_LIST_STEP, limit - keys.length);
    const page = await ctx.store.keys.page({ limit: step, after, now, ...(q.status ? { status: q.status } : {}) });
    const secrets = await ctx.store.keys.liveSecretsOf(
      page.rows.map((r) => r.id),
      now,
    );
    for (const row of page.rows) keys.push(keyView(row, secrets.get(row.id) ?? [], now));
    after = page.next;
    if (after === null || keys.length >= limit || page.rows.length < step) break;
    await nextTurn();
  }
  return { keys, next_cursor: after === null ? null : encodeKeyCursor(after) };
}

export function registerKeyRoutes(router: Router, ctx: ControlContext): void {
  router.post('/_admin/v1/keys', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(IssueKeyRequest, await readJson(req));
    if (input.wallet !== undefined && input.account !== undefined) {
      // A shared account's wallet is every one of its keys': set on the account, not by one key's issue.
      const message = "the account's wallet is set with accounts wallet";
      throw new SvcError('svc_bad_request', `wallet: ${message}`, { extra: { errors: [{ field: 'wallet', message }] } });
    }
    if (input.wallet !== undefined && ctx.config.money.approvals >= 2) {
      // A wallet set at issue would skip the second operator its attachment needs.
      throw new SvcError(
        'svc_conflict',
        'with money.approvals: 2 a payout wallet is attached by two operators: issue the key without one, then svcctl keys wallet ID ADDR',
        { extra: { reason: 'two_person' } },
      );
    }
    sendJson(res, 201, await issueKey(ctx, { actor, tokenId }, input));
  });

  router.get('/_admin/v1/keys', { query: ['status', 'limit', 'cursor'] }, async ({ res, query }) => {
    sendJson(res, 200, await listKeys(ctx, query));
  });

  router.get('/_admin/v1/keys/:id', async ({ res, params }) => {
    sendJson(res, 200, await viewKey(ctx, await keyOrNotFound(ctx, params.id!)));
  });

  router.post('/_admin/v1/keys/:id/revoke', async ({ res, params, actor, tokenId }) => {
    const row = await keyOrNotFound(ctx, params.id!);
    const now = ctx.now();
    // Revoked meanwhile (through this control or another on the database): nothing to change.
    const made =
      row.status === 'revoked'
        ? null
        : await mutateUnlessDone(
            ctx.store,
            { actor, tokenId, now },
            { action: 'keys.revoke', target: row.id, detail: { prefix: row.prefix }, changes: [{ kind: 'key', entity: row.id }] },
            async (tx) => {
              if (!(await tx.keys.revoke(row.id, now))) throw new AlreadyDone();
              await tx.keys.expireSecrets(row.id, now, now);
            },
          );
    const view = await viewKey(ctx, await keyOrNotFound(ctx, row.id));
    if (made === null) sendJson(res, 200, { ...view, version: await ctx.store.version(), changed: false } satisfies KeyRevoked);
    else sendJson(res, 200, { ...view, version: made.version, changed: true } satisfies KeyRevoked);
  });

  router.post('/_admin/v1/keys/:id/rotate', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(RotateKeyRequest, await readJson(req));
    const row = await keyOrNotFound(ctx, params.id!);
    const now = ctx.now();
    const mustBeActive = (key: KeyRow) => {
      const status = keyStatus(key, now);
      if (status !== 'active') throw new SvcError('svc_conflict', `key ${key.id} is ${status}; issue a new key instead`);
    };
    mustBeActive(row);
    const grace = input.grace_seconds ?? ctx.config.keys.rotateGraceS;
    const secret = newSecret();
    // Filled in under the writer lock: the secret this rotation replaces is the one current
    // then (another rotation may have committed since `row` was read). Recorded after `fn`.
    const detail: Record<string, unknown> = { old_prefix: row.prefix, prefix: secret.prefix, grace_seconds: grace };
    const { result: view, version } = await ctx.store.mutate(
      { actor, tokenId, now },
      { action: 'keys.rotate', target: row.id, detail, changes: [{ kind: 'key', entity: row.id }] },
      async (tx) => {
        const current = (await tx.keys.byId(row.id))!;
        mustBeActive(current);
        detail.old_prefix = current.prefix;
        await replaceSecrets(tx, row.id, secret, now + grace * 1000, now);
        // As this rotation left it: a rotation committed right after must not show in its answer.
        return viewKeyIn(tx, row.id, now);
      },
    );
    const issued: IssuedKey = { ...view, key: secret.key, version };
    sendJson(res, 200, issued);
  });

  router.post('/_admin/v1/keys/:id/lift', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(LiftKeyRequest, await readJson(req));
    const row = await keyOrNotFound(ctx, params.id!);
    const now = ctx.now();
    const until = now + input.for_seconds * 1000;
    const { result: view, version } = await ctx.store.mutate(
      { actor, tokenId, now },
      {
        action: 'keys.lift',
        target: row.id,
        detail: { ...input.limit, until: new Date(until).toISOString() },
        changes: [{ kind: 'key', entity: row.id }],
      },
      async (tx) => {
        await tx.keys.setLift(row.id, { ...input.limit, until });
        return viewKeyIn(tx, row.id, now);
      },
    );
    sendJson(res, 200, { ...view, version } satisfies KeyChange);
  });

  // A wallet decides where a key's refunds are paid: a two-person action (money-actions.ts).
  router.put('/_admin/v1/keys/:id/wallet', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(WalletRequest, await readJson(req));
    const row = await keyOrNotFound(ctx, params.id!);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'keys.wallet.attach', { id: row.id, wallet: input.wallet });
    sendJson(res, answer.status, answer.body);
  });

  router.delete('/_admin/v1/keys/:id/wallet', async ({ res, params, actor, tokenId }) => {
    const row = await keyOrNotFound(ctx, params.id!);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'keys.wallet.detach', { id: row.id });
    sendJson(res, answer.status, answer.body);
  });
}
