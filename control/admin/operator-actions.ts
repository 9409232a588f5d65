/**
 * The operators' two-person actions (money-actions.ts decides when they wait): an operator
 * added, and an operator's token rotated. Either makes a token that works as that operator, so
 * with `money.approvals: 2` one person must not do it alone when the operator holds `money` or
 * `operators` ({@link TWO_PERSON_GRANTS}): that token would be the second person of every money
 * action. Rotating one's own token is never two-person (it makes no second identity).
 *
 * The token is made here, when the action runs (at once, or when a second operator approves),
 * and leaves control only in this answer; the store and the audit row get its id and the store
 * its SHA-256. Times count from when it runs: an expiry or a grace starts at the approval.
 */
import { TWO_PERSON_GRANTS } from '../../protocol/approvals';
import { SvcError } from '../../protocol/errors';
import { newId } from '../../protocol/keys';
import {
  generateOperatorToken,
  hashOperatorToken,
  type IssuedOperatorToken,
  type OperatorScope,
  type RotatedOperatorToken,
} from '../../protocol/operators';
import type { StoreTables } from '../store';
import { operatorScopes, operatorStatus, tokenLive } from '../store/operators';
import type { Executor } from './action-executor';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

const mintsMoney = (scopes: readonly OperatorScope[]): boolean => scopes.some((scope) => TWO_PERSON_GRANTS.includes(scope));

/** 409 `svc_conflict` when an operator by that name exists (a revoked operator's name is not given again). */
export async function nameFree(tables: Pick<StoreTables, 'operators'>, name: string): Promise<void> {
  if (await tables.operators.byName(name)) {
    throw new SvcError('svc_conflict', `an operator named ${name} exists (a revoked operator's name is not given again)`);
  }
}

/** An operator added with its first token. */
export const addOperator: Executor<'operators.add', IssuedOperatorToken> = {
  status: 201,
  target: (input) => input.name,
  twoPerson: (input) => mintsMoney(input.scopes),
  run: async (ctx, input, by, within) => {
    const now = ctx.now();
    const scopes = input.scopes;
    const expiresAt = input.expires_in_seconds === undefined ? null : now + input.expires_in_seconds * 1000;
    const token = generateOperatorToken();
    const tokenId = newId('opt');
    await ctx.store.mutate(
      { ...by, now },
      { action: 'operators.add', target: input.name, detail: { scopes, token_id: tokenId, expires_at: iso(expiresAt) } },
      async (tx) => {
        await within(tx);
        await nameFree(tx, input.name);
        await tx.operators.insert({ name: input.name, scopes, created_at: now, expires_at: expiresAt });
        await tx.operators.addToken({ token_id: tokenId, operator: input.name, sha256: hashOperatorToken(token), created_at: now });
      },
    );
    return { name: input.name, token, token_id: tokenId, scopes, created_at: iso(now)!, expires_at: iso(expiresAt) };
  },
};

/** A new token for an operator; the tokens live then stop at once, or at the end of the grace. */
export const rotateOperator: Executor<'operators.rotate', RotatedOperatorToken> = {
  status: 200,
  target: (input) => input.name,
  twoPerson: (input, by) => input.name !== by.actor && mintsMoney(input.scopes),
  run: async (ctx, input, by, within) => {
    const name = input.name;
    const now = ctx.now();
    const until = now + (input.grace_seconds ?? 0) * 1000;
    const token = generateOperatorToken();
    const tokenId = newId('opt');
    // Filled in under the writer lock: the tokens this rotation replaces are the ones live then.
    const detail: Record<string, unknown> = { token_id: tokenId, grace_seconds: input.grace_seconds ?? 0 };
    const { result } = await ctx.store.mutate({ ...by, now }, { action: 'operators.rotate', target: name, detail }, async (tx) => {
      await within(tx);
      const current = await tx.operators.byName(name);
      if (current === undefined) throw new SvcError('svc_not_found', `no operator named ${name}`);
      const status = operatorStatus(current, now);
      if (status !== 'active') throw new SvcError('svc_conflict', `operator ${name} is ${status}; add a new operator instead`);
      const replaced = (await tx.operators.tokens(name))
        .filter((t) => tokenLive(t, now))
        .map((t) => ({ token_id: t.token_id, expires_at: iso(t.expires_at !== null && t.expires_at < until ? t.expires_at : until)! }));
      detail.replaced = replaced.map((t) => t.token_id);
      await tx.operators.expireTokens(name, until);
      await tx.operators.addToken({ token_id: tokenId, operator: name, sha256: hashOperatorToken(token), created_at: now });
      return { current, replaced };
    });
    return {
      name,
      token,
      token_id: tokenId,
      scopes: operatorScopes(result.current),
      created_at: iso(now)!,
      expires_at: iso(result.current.expires_at),
      replaced: result.replaced,
    };
  },
};
