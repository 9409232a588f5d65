/**
 * The agent's own account on the public API ({api_url}), read with its beta key:
 *
 * - `GET /api/v1/account[?window=24h|7d|30d]`: the key, the rate limit in force for it, over
 *   the window (ending now) its calls by outcome, the refunds and premiums settled, the
 *   estimate of what its unsettled calls would move, when it last called, and the balance of
 *   the account it belongs to;
 * - `GET /api/v1/account/calls[?before=&limit=]`: its calls newest first, paged with the sealed
 *   cursor of `/api/activity` (`../activity-cursor.ts`).
 *
 * Like every {api_url} read they come after the per-IP limit and the User-Agent filter
 * (`server.ts`). The key is looked up by its SHA-256 (the only form stored, as the gateways hold
 * it), so the lookup's time does not depend on how much of a key matches; a missing, malformed,
 * unknown, revoked or expired key is 401 `svc_unauthorized`, all with one detail, and the key
 * itself is never echoed or logged. Answers are cached for `cache.statsTtlS` at most, under the
 * key's id (never shared between keys), and sent `Cache-Control: private` with `Vary: Authorization`.
 */
import type { IncomingMessage } from 'node:http';
import {
  ACCOUNT_CALLS_MAX_LIMIT,
  ACCOUNT_WINDOWS,
  AccountWindowName,
  DEFAULT_ACCOUNT_WINDOW,
  type AccountAnswer,
  type AccountBalance,
  type AccountCallsPage,
  type AccountLimits,
  type OutcomeCounts,
} from '../../protocol/account';
import { bearerOf } from '../../protocol/bearer';
import { SvcError } from '../../protocol/errors';
import { hashKey, isWellFormedKey } from '../../protocol/keys';
import { COVERED_FAILURES, OUTCOMES } from '../../protocol/outcome';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { CursorCodec, parseBefore } from '../activity-cursor';
import { keyStatus, type KeyRow } from '../store/keys';
import type { AccountGroup } from '../store/public-reads';
import { ResponseCache, jsonAnswer } from '../http/cache';
import type { OpaqueIds } from '../../protocol/opaque-ids';
import { limitsFromConfig } from '../limits';
import { intParam } from '../http/validate';

/** No `access-control-allow-origin`: an account is read with a key, not by any web page. */
const HEADERS = { 'x-content-type-options': 'nosniff' };

const iso = (ms: number): string => new Date(ms).toISOString();

/** The key presenting the request, or 401 `svc_unauthorized` (one detail for every reason). */
async function accountKey(ctx: ControlContext, req: IncomingMessage): Promise<KeyRow> {
  const presented = bearerOf(req.headers.authorization);
  const now = ctx.now();
  const row = presented !== null && isWellFormedKey(presented) ? await ctx.store.keys.bySecret(hashKey(presented), now) : undefined;
  if (row === undefined || keyStatus(row, now) !== 'active') {
    throw new SvcError(
      'svc_unauthorized',
      'send Authorization: Bearer <your beta key>; a missing, unknown, revoked or expired key has no account',
      {
        headers: { 'www-authenticate': 'Bearer realm="account"' },
      },
    );
  }
  return row;
}

/** The policy the gateways apply to the key at `now`: an active lift, else its own limit, else the default. */
export function accountLimits(row: KeyRow, defaults: { count: number; window_seconds: number; burst: number }, now: number): AccountLimits {
  const lifted = row.lift_until !== null && row.lift_until > now && row.lift_count !== null && row.lift_window_s !== null;
  const own = row.limit_count !== null && row.limit_window_s !== null;
  if (!lifted && !own) return { ...defaults, source: 'default', until: null };
  const count = lifted ? row.lift_count! : row.limit_count!;
  const windowSeconds = lifted ? row.lift_window_s! : row.limit_window_s!;
  // Burst scales with the rate, in the default policy's proportion (as the gateway does).
  const burst = Math.max(1, Math.round((count * defaults.burst) / defaults.count));
  return {
    count,
    window_seconds: windowSeconds,
    burst,
    source: lifted ? 'lift' : 'key',
    until: lifted ? iso(row.lift_until!) : null,
  };
}

/** The window's figures from the store's groups (outcome × settled or not). */
export function accountFigures(
  groups: readonly AccountGroup[],
): Pick<AccountAnswer, 'calls' | 'outcomes' | 'refunds' | 'premiums' | 'unsettled_calls'> {
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as OutcomeCounts;
  const figures = { calls: 0, refunds: { settled: 0, pending: 0 }, premiums: { settled: 0, pending: 0 }, unsettled_calls: 0 };
  for (const g of groups) {
    outcomes[g.outcome] += g.calls;
    figures.calls += g.calls;
    if (g.settled) {
      figures.refunds.settled += g.refund;
      figures.premiums.settled += g.premium;
      continue;
    }
    figures.unsettled_calls += g.calls;
    if (COVERED_FAILURES.has(g.outcome)) figures.refunds.pending += g.price + g.endpoint_premium;
    else if (g.outcome === 'ok') figures.premiums.pending += g.endpoint_premium;
  }
  return { ...figures, outcomes };
}

/**
 * The balance of account `accountId`: what it may still spend (its ledger balance less what its
 * admitted, unsettled prepaid calls reserved), the reservations, and whether what it may spend
 * is under its threshold. What gateways hold of it for prepaid calls is still available: it is
 * the account's, only placed where the calls are admitted.
 */
async function accountBalance(ctx: ControlContext, accountId: string): Promise<AccountBalance> {
  const [account, holding] = await Promise.all([ctx.store.accounts.byId(accountId), ctx.store.budgets.holding(accountId)]);
  const available = holding.balance - holding.reserved;
  return { account_id: accountId, available, reserved: holding.reserved, low: account?.low != null && available < account.low };
}

export function registerAccountRoutes(router: Router, ctx: ControlContext, ids: OpaqueIds): void {
  const cursors = new CursorCodec(ctx.store.idSecret);
  const cache = new ResponseCache({ ttlS: ctx.config.cache.statsTtlS, now: ctx.now, scope: 'private' });
  const defaults = limitsFromConfig(ctx.config).key;

  router.get('/api/v1/account', { query: ['window'] }, async ({ req, res, query }) => {
    const raw = query.get('window') ?? DEFAULT_ACCOUNT_WINDOW;
    const parsed = AccountWindowName.safeParse(raw);
    if (!parsed.success) {
      throw new SvcError('svc_bad_request', 'window must be 24h, 7d or 30d', {
        extra: { errors: [{ field: 'window', message: 'must be 24h, 7d or 30d' }] },
      });
    }
    const window = parsed.data;
    const key = await accountKey(ctx, req);
    await cache.send(req, res, `account:${key.id}:${window}`, async () => {
      const now = ctx.now();
      const from = now - ACCOUNT_WINDOWS[window];
      const last = await ctx.store.publicReads.lastCall(key.id);
      const answer: AccountAnswer = {
        key_id: key.id,
        name: key.name,
        status: keyStatus(key, now),
        limits: accountLimits(key, defaults, now),
        window: { from: iso(from), to: iso(now) },
        ...accountFigures(await ctx.store.publicReads.accountGroups(key.id, from, now + 1)),
        last_call_at: last === null ? null : iso(last),
        balance: await accountBalance(ctx, key.account_id),
      };
      return jsonAnswer(answer, HEADERS);
    });
  });

  router.get('/api/v1/account/calls', { query: ['before', 'limit'] }, async ({ req, res, query }) => {
    const limit = intParam(query, 'limit', ctx.config.public.activityPageSize, ACCOUNT_CALLS_MAX_LIMIT);
    const before = parseBefore(query.get('before'), cursors);
    const key = await accountKey(ctx, req);
    const position = before === null ? '' : `${before.started_at}:${before.call_id}`;
    await cache.send(req, res, `calls:${key.id}:${limit}:${position}`, async () => {
      // One extra row says whether an older page exists.
      const rows = await ctx.store.publicReads.accountCalls(key.id, limit + 1, before);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const answer: AccountCallsPage = {
        calls: page.map((r) => ({
          call_id: r.call_id,
          provider: ids.provider(r.endpoint_id),
          display_name: r.display_name,
          started_at: iso(r.started_at),
          outcome: r.outcome,
          status: r.status,
          latency_ms: r.latency_ms,
          refund: r.refund,
          premium: r.premium,
          settled_batch: r.settled_batch,
        })),
        next_before: rows.length > limit && last ? cursors.seal({ started_at: last.started_at, call_id: last.call_id }) : null,
      };
      return jsonAnswer(answer, HEADERS);
    });
  });
}
