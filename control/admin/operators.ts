/**
 * `/_admin/v1/operators`: add, list, show, revoke, rotate. An operator's token leaves control
 * once, in the answer to add or rotate; the store and the audit log get its id (`opt_…`) and
 * the store its SHA-256. Root, the bootstrap admin token's operator, is listed like the others
 * but its token is not rotated here (it is the data dir's `admin.token`, or `SVC_ADMIN_TOKEN`).
 */
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../protocol/http';
import { newId } from '../../protocol/keys';
import {
  AddOperatorRequest,
  OPERATOR_SCOPES,
  ROOT_OPERATOR,
  RotateOperatorRequest,
  generateOperatorToken,
  hashOperatorToken,
  type IssuedOperatorToken,
  type OperatorList,
  type OperatorRevoked,
  type OperatorView,
  type RotatedOperatorToken,
} from '../../protocol/operators';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';
import type { StoreTables } from '../store';
import { operatorScopes, operatorStatus, operatorView, tokenLive, type OperatorRow, type OperatorTokenRow } from '../store/operators';
import { AlreadyDone, mutateUnlessDone } from './mutation';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

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

  router.post('/_admin/v1/operators', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(AddOperatorRequest, await readJson(req));
    const now = ctx.now();
    const scopes = OPERATOR_SCOPES.filter((scope) => input.scopes.includes(scope));
    const expiresAt = input.expires_in_seconds === undefined ? null : now + input.expires_in_seconds * 1000;
    const token = generateOperatorToken();
    const newTokenId = newId('opt');
    await ctx.store.mutate(
      { actor, tokenId, now },
      { action: 'operators.add', target: input.name, detail: { scopes, token_id: newTokenId, expires_at: iso(expiresAt) } },
      async (tx) => {
        if (await tx.operators.byName(input.name)) {
          throw new SvcError('svc_conflict', `an operator named ${input.name} exists (a revoked operator's name is not given again)`);
        }
        await tx.operators.insert({ name: input.name, scopes, created_at: now, expires_at: expiresAt });
        await tx.operators.addToken({ token_id: newTokenId, operator: input.name, sha256: hashOperatorToken(token), created_at: now });
      },
    );
    const issued: IssuedOperatorToken = {
      name: input.name,
      token,
      token_id: newTokenId,
      scopes,
      created_at: iso(now)!,
      expires_at: iso(expiresAt),
    };
    sendJson(res, 201, issued);
  });

  router.post('/_admin/v1/operators/:name/revoke', async ({ req, res, params, actor, tokenId }) => {
    req.resume();
    const name = params.name!;
    const row = await operatorOrNotFound(ctx.store, name);
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

  router.post('/_admin/v1/operators/:name/rotate', async ({ req, res, params, actor, tokenId }) => {
    const input = parseBody(RotateOperatorRequest, await readJson(req));
    const name = params.name!;
    if (name === ROOT_OPERATOR) {
      throw new SvcError(
        'svc_bad_request',
        "root's token is the bootstrap admin token (admin.token in control's data dir, or SVC_ADMIN_TOKEN) and is not rotated here; give operators their own tokens instead",
      );
    }
    await operatorOrNotFound(ctx.store, name);
    const now = ctx.now();
    const until = now + (input.grace_seconds ?? 0) * 1000;
    const token = generateOperatorToken();
    const newTokenId = newId('opt');
    // Filled in under the writer lock: the tokens this rotation replaces are the ones live then.
    const detail: Record<string, unknown> = { token_id: newTokenId, grace_seconds: input.grace_seconds ?? 0 };
    const { result } = await ctx.store.mutate({ actor, tokenId, now }, { action: 'operators.rotate', target: name, detail }, async (tx) => {
      const current = await operatorOrNotFound(tx, name);
      const status = operatorStatus(current, now);
      if (status !== 'active') throw new SvcError('svc_conflict', `operator ${name} is ${status}; add a new operator instead`);
      const replaced = (await tx.operators.tokens(name))
        .filter((t) => tokenLive(t, now))
        .map((t) => ({ token_id: t.token_id, expires_at: iso(t.expires_at !== null && t.expires_at < until ? t.expires_at : until)! }));
      detail.replaced = replaced.map((t) => t.token_id);
      await tx.operators.expireTokens(name, until);
      await tx.operators.addToken({ token_id: newTokenId, operator: name, sha256: hashOperatorToken(token), created_at: now });
      return { current, replaced };
    });
    const rotated: RotatedOperatorToken = {
      name,
      token,
      token_id: newTokenId,
      scopes: operatorScopes(result.current),
      created_at: iso(now)!,
      expires_at: iso(result.current.expires_at),
      replaced: result.replaced,
    };
    sendJson(res, 200, rotated);
  });
}
