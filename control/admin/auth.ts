/**
 * Bearer-token checks for control's listeners.
 *
 * - {@link TokenAuth} (sync and metrics): tokens compared by SHA-256 digest with
 *   `timingSafeEqual`, so neither length nor content leaks through timing.
 * - {@link AdminAuth} (the admin API): the bearer is root's token (the bootstrap admin token,
 *   compared the same way) or an operator's (`svc_op_…`), found in the store by its SHA-256, so
 *   how much of a token matches never shows in the time taken. It is read again on every
 *   request, from the database every control of a shared one uses: an operator added, revoked
 *   or rotated through one control holds on all of them at once. Then the route's scope
 *   (`ADMIN_ROUTE_SCOPES`, protocol/operators.ts) must be one the operator holds, or 403
 *   `svc_forbidden_scope`; a route missing from that table is refused to everyone, root too.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { bearerOf } from '../../protocol/bearer';
import { SvcError } from '../../protocol/errors';
import type { Logger } from '../../runtime/log';
import {
  ACTION_SCOPED_ROUTES,
  OPERATOR_SCOPES,
  ROOT_OPERATOR,
  hashOperatorToken,
  isOperatorTokenShaped,
  routeScope,
  type OperatorScope,
} from '../../protocol/operators';
import type { Caller, MatchedRoute } from '../http/router';
import type { Store } from '../store';
import { LAST_USED_EVERY_MS, operatorScopes, operatorStatus, tokenLive, type OperatorRow } from '../store/operators';

/** A token by name: the token itself, or only its SHA-256 (a token made by another control on a shared database). */
export type NamedToken = { name: string; token: string } | { name: string; digest: Buffer };

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** The bearer token of `Authorization: Bearer <token>`, or null for any other form. */
function bearer(req: IncomingMessage): string | null {
  return bearerOf(req.headers.authorization);
}

function unauthorized(realm: string, detail: string): SvcError {
  return new SvcError('svc_unauthorized', detail, { headers: { 'www-authenticate': `Bearer realm="${realm}"` } });
}

const refusal = (req: IncomingMessage, realm: string): SvcError =>
  unauthorized(
    realm,
    req.headers.authorization === undefined ? `missing bearer token for the ${realm} API` : `invalid bearer token for the ${realm} API`,
  );

export class TokenAuth {
  private readonly tokens: { name: string; digest: Buffer }[];
  private readonly realm: string;

  constructor(realm: string, tokens: NamedToken[]) {
    this.realm = realm;
    this.tokens = tokens.map((t) => ({ name: t.name, digest: 'token' in t ? digest(t.token) : t.digest }));
  }

  /** The token's name, or throws 401 `svc_unauthorized`. */
  authenticate(req: IncomingMessage): string {
    const token = bearer(req);
    if (token !== null) {
      const presented = digest(token);
      let found: string | null = null;
      for (const t of this.tokens) if (timingSafeEqual(t.digest, presented)) found = t.name;
      if (found !== null) return found;
    }
    throw refusal(req, this.realm);
  }
}

/** Who calls the admin API: the operator (the audit's actor), the token's id, and the scopes it holds. */
export interface Operator extends Caller {
  scopes: ReadonlySet<OperatorScope>;
}

export interface AdminAuthOptions {
  store: Store;
  now: () => number;
  log: Logger;
  /** Root's token: its SHA-256, and the id the audit log records for it (`root`, `root-env`). */
  root: { digest: Buffer; tokenId: string };
}

const REALM = 'admin';

/**
 * A failure before the caller is known (an operator-shaped token not yet looked up; anyone can
 * shape one): told as the public listeners tell it, so only a caller whose token was checked
 * learns where the database is (`svc_store_unavailable`'s masked URL).
 */
function beforeKnown(err: unknown): never {
  if (err instanceof SvcError && err.publicDetail !== undefined) {
    throw new SvcError(err.code, err.publicDetail, { headers: { ...err.headers }, cause: err });
  }
  throw err;
}

export class AdminAuth {
  constructor(private readonly opts: AdminAuthOptions) {}

  /** The operator presenting the request's bearer token, or throws 401 `svc_unauthorized`. */
  async authenticate(req: IncomingMessage): Promise<Operator> {
    const token = bearer(req);
    if (token === null) throw refusal(req, REALM);
    const { store, root } = this.opts;
    if (timingSafeEqual(digest(token), root.digest)) {
      const row = await store.operators.byName(ROOT_OPERATOR);
      if (row !== undefined && row.revoked_at !== null) throw unauthorized(REALM, 'the root token is revoked; use an operator’s token');
      if (row !== undefined) await this.used(row);
      return { actor: ROOT_OPERATOR, tokenId: root.tokenId, scopes: new Set(OPERATOR_SCOPES) };
    }
    // Anything else is refused without a look in the database (a beta key, the sync or metrics token, noise).
    if (!isOperatorTokenShaped(token)) throw refusal(req, REALM);
    const owner = await store.operators.byTokenHash(hashOperatorToken(token)).catch(beforeKnown);
    if (owner === undefined) throw refusal(req, REALM);
    const now = this.opts.now();
    const status = operatorStatus(owner.operator, now);
    if (status !== 'active') throw unauthorized(REALM, `operator ${owner.operator.name} is ${status}`);
    if (!tokenLive(owner.token, now)) {
      throw unauthorized(
        REALM,
        `token ${owner.token.token_id} of operator ${owner.operator.name} was replaced by a rotation and no longer works`,
      );
    }
    await this.used(owner.operator);
    return { actor: owner.operator.name, tokenId: owner.token.token_id, scopes: new Set(operatorScopes(owner.operator)) };
  }

  /** 403 `svc_forbidden_scope` unless the operator holds the route's scope. */
  authorize(operator: Operator, route: MatchedRoute): void {
    const scope = routeScope(route.method, route.pattern);
    if (scope !== undefined && operator.scopes.has(scope)) return;
    // Deciding a money action: the route checks the action's own scope once it has read the request.
    if (ACTION_SCOPED_ROUTES[`${route.method} ${route.pattern}`]?.some((s) => operator.scopes.has(s))) return;
    const needed = scope === undefined ? `a scope (none is declared for ${route.method} ${route.pattern})` : `the scope ${scope}`;
    const held = operator.scopes.size === 0 ? 'none' : [...operator.scopes].join(', ');
    throw new SvcError(
      'svc_forbidden_scope',
      `${route.method} ${route.pattern} needs ${needed}; operator ${operator.actor} holds ${held}`,
      {
        extra: { scope: scope ?? null },
      },
    );
  }

  /** Record the operator's use, at most once a minute (most requests write nothing). */
  private async used(row: OperatorRow): Promise<void> {
    const now = this.opts.now();
    if (row.last_used_at !== null && row.last_used_at > now - LAST_USED_EVERY_MS) return;
    try {
      await this.opts.store.operators.touch(row.name, now);
    } catch (err) {
      // Bookkeeping: a failed write must not refuse a valid token.
      this.opts.log.warn('could not record an operator’s last use', { operator: row.name, err });
    }
  }
}
