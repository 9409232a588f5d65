/**
 * `/_admin/v1/operators`: add, list, show, revoke, rotate. An operator's token leaves control
 * once, in the answer to add or rotate (or to the approval of an add: money-actions.ts); the
 * store and the audit log get its id (`opt_…`) and the store its SHA-256.
 *
 * No one reaches past their own scopes: an operator grants only scopes it holds, and revokes or
 * rotates only operators whose scopes are all among its own (else 403 `svc_forbidden_scope`
 * naming the scope). Root, the bootstrap admin token's operator, is listed like the others, is
 * revoked by no one, and its token is not rotated here (it is the data dir's `admin.token`, or
 * `SVC_ADMIN_TOKEN`): root is told so, anyone else is refused the scope. With
 * `money.approvals: 2`, adding an operator who gets `money` or `operators`, or rotating another
 * operator's token who holds one, waits for a second operator (operator-actions.ts). Scopes
 * are fixed when an operator is added: no route widens them.
 */
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../runtime/http';
import {
  AddOperatorRequest,
  OPERATOR_SCOPES,
  ROOT_OPERATOR,
  ROOT_TOKEN_ID,
  RotateOperatorRequest,
  type OperatorList,
  type OperatorRevoked,
  type OperatorTokenView,
  type OperatorView,
  type OperatorScope,
} from '../../protocol/operators';
import type { ControlContext } from '../context';
import type { RequestContext, Router } from '../http/router';
import { parseBody } from '../http/validate';
import type { StoreTables } from '../store';
import { operatorScopes, operatorStatus, tokenLive, type OperatorRow, type OperatorTokenRow } from '../store/operators';
import { moneyAction } from './money-actions';
import { nameFree } from './operator-actions';
import { AlreadyDone, mutateUnlessDone } from '../mutation';

/** Every operator's tokens, by operator. */
function byOperator(tokens: readonly OperatorTokenRow[]): Map<string, OperatorTokenRow[]> {
  const map = new Map<string, OperatorTokenRow[]>();
  for (const token of tokens) map.set(token.operator, [...(map.get(token.operator) ?? []), token]);
  return map;
}

async function operatorOrNotFound(tables: Pick<StoreTables, 'operators'>, name: string): Promise<OperatorRow> {
  const row = await tables.operators.byName(name);
  if (!row) throw new SvcError('svc_not_found', `no operator named ${name}`);
  return row;
}

async function viewOperator(tables: Pick<StoreTables, 'operators'>, name: string, now: number): Promise<OperatorView> {
  return operatorView(await operatorOrNotFound(tables, name), await tables.operators.tokens(name), now);
}

/**
 * Whether some operator but `except` can still manage operators at `now`: active, holding
 * `operators`, with a token that works (root's is the bootstrap admin token). Revoking the
 * last one would leave nobody able to add or revoke operators again.
 */
async function anotherManager(tx: StoreTables, except: string, now: number): Promise<boolean> {
  const tokens = byOperator(await tx.operators.tokens());
  return (await tx.operators.list()).some(
    (row) =>
      row.name !== except &&
      operatorStatus(row, now) === 'active' &&
      operatorScopes(row).includes('operators') &&
      (row.name === ROOT_OPERATOR || (tokens.get(row.name) ?? []).some((t) => tokenLive(t, now))),
  );
}

/**
 * 403 `svc_forbidden_scope` naming the first of `scopes` the caller does not hold: no operator
 * grants, revokes or rotates beyond its own scopes. `what` ends with the words before the scope.
 */
function withinOwnScopes(caller: Pick<RequestContext, 'actor' | 'scopes'>, scopes: readonly OperatorScope[], what: string): void {
  const lacking = scopes.find((scope) => !caller.scopes.has(scope));
  if (lacking === undefined) return;
  throw new SvcError('svc_forbidden_scope', `operator ${caller.actor} cannot ${what} ${lacking}: it does not hold ${lacking} itself`, {
    extra: { scope: lacking },
  });
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** Root's one token, as the operator list shows it: the bootstrap admin token, made with the install. */
const rootToken = (row: OperatorRow): OperatorTokenView => ({
  token_id: ROOT_TOKEN_ID,
  created_at: iso(row.created_at)!,
  expires_at: null,
});

/** An operator as the admin API shows it, with its tokens that work at `now` (none once it is revoked or expired). */
export function operatorView(row: OperatorRow, tokens: readonly OperatorTokenRow[], now: number): OperatorView {
  const status = operatorStatus(row, now);
  const live =
    status !== 'active'
      ? []
      : row.name === ROOT_OPERATOR
        ? [rootToken(row)]
        : tokens
            .filter((t) => tokenLive(t, now))
            .map((t) => ({ token_id: t.token_id, created_at: iso(t.created_at)!, expires_at: iso(t.expires_at) }));
  return {
    name: row.name,
    scopes: operatorScopes(row),
    status,
    created_at: iso(row.created_at)!,
    expires_at: iso(row.expires_at),
    revoked_at: iso(row.revoked_at),
    last_used_at: iso(row.last_used_at),
    tokens: live,
  };
}

export function registerOperatorRoutes(router: Router, ctx: ControlContext): void {
  router.get('/_admin/v1/operators', async ({ res }) => {
    const now = ctx.now();
    const { rows, tokens } = await ctx.store.read(async (tx) => ({ rows: await tx.operators.list(), tokens: await tx.operators.tokens() }));
    const mine = byOperator(tokens);
    sendJson(res, 200, { operators: rows.map((row) => operatorView(row, mine.get(row.name) ?? [], now)) } satisfies OperatorList);
  });

  router.get('/_admin/v1/operators/:name', async ({ res, params }) => {
    sendJson(res, 200, (await viewOperator(ctx.store, params.name!, ctx.now())) satisfies OperatorView);
  });

  router.post('/_admin/v1/operators', async ({ req, res, actor, tokenId, scopes: held }) => {
    const input = parseBody(AddOperatorRequest, await readJson(req));
    const scopes = OPERATOR_SCOPES.filter((scope) => input.scopes.includes(scope));
    withinOwnScopes({ actor, scopes: held }, scopes, `grant the scope`);
    await nameFree(ctx.store, input.name);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'operators.add', { ...input, scopes });
    sendJson(res, answer.status, answer.body);
  });

  router.post('/_admin/v1/operators/:name/revoke', async ({ req, res, params, actor, tokenId, scopes: held }) => {
    req.resume();
    const name = params.name!;
    const row = await operatorOrNotFound(ctx.store, name);
    if (name === ROOT_OPERATOR) {
      throw new SvcError(
        'svc_conflict',
        "root is never revoked: it is the bootstrap admin token (admin.token in control's data dir, or SVC_ADMIN_TOKEN), the way back in when every other token is lost; keep that file offline instead",
        { extra: { reason: 'root' } },
      );
    }
    withinOwnScopes({ actor, scopes: held }, operatorScopes(row), `revoke ${name}, who holds the scope`);
    const now = ctx.now();
    const made =
      row.revoked_at !== null
        ? null
        : await mutateUnlessDone(ctx.store, { actor, tokenId, now }, { action: 'operators.revoke', target: name }, async (tx) => {
            const current = await operatorOrNotFound(tx, name);
            if (current.revoked_at !== null) throw new AlreadyDone();
            if (!(await anotherManager(tx, name, now))) {
              throw new SvcError(
                'svc_conflict',
                `${name} is the last operator who can manage operators; add another with the operators scope first (svcctl operators add NAME --scopes operators)`,
              );
            }
            await tx.operators.revoke(name, now);
            await tx.operators.expireTokens(name, now);
          });
    sendJson(res, 200, { ...(await viewOperator(ctx.store, name, ctx.now())), changed: made !== null } satisfies OperatorRevoked);
  });

  router.post('/_admin/v1/operators/:name/rotate', async ({ req, res, params, actor, tokenId, scopes: held }) => {
    const input = parseBody(RotateOperatorRequest, await readJson(req));
    const name = params.name!;
    if (name === ROOT_OPERATOR && actor !== ROOT_OPERATOR) {
      const lacking = OPERATOR_SCOPES.find((scope) => !held.has(scope)) ?? null;
      throw new SvcError('svc_forbidden_scope', `root's token is rotated by root only; operator ${actor} is not root`, {
        extra: { scope: lacking },
      });
    }
    if (name === ROOT_OPERATOR) {
      throw new SvcError(
        'svc_bad_request',
        "root's token is the bootstrap admin token (admin.token in control's data dir, or SVC_ADMIN_TOKEN) and is not rotated here; give operators their own tokens instead",
      );
    }
    const row = await operatorOrNotFound(ctx.store, name);
    withinOwnScopes({ actor, scopes: held }, operatorScopes(row), `rotate ${name}, who holds the scope`);
    const status = operatorStatus(row, ctx.now());
    if (status !== 'active') throw new SvcError('svc_conflict', `operator ${name} is ${status}; add a new operator instead`);
    const answer = await moneyAction(ctx, { actor, tokenId }, 'operators.rotate', { ...input, name, scopes: operatorScopes(row) });
    sendJson(res, answer.status, answer.body);
  });
}
