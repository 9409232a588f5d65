/**
 * Operators and their tokens (migration 16). Only the SHA-256 (hex) of a token is stored, and no
 * statement here reads it back: a token is found by its digest, the way a request presents it.
 * The non-SQL rules (status, scopes) are here too; the admin API's view is in `control/admin/operators.ts`.
 */
import { OPERATOR_SCOPES, type OperatorScope, type OperatorStatus } from '../../protocol/operators';

export interface OperatorRow {
  name: string;
  /** JSON array of scope names; root's is `["*"]`, every scope. */
  scopes: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
}

/** A token as stored, without its digest. */
export interface OperatorTokenRow {
  token_id: string;
  operator: string;
  created_at: number;
  /** Null while it lives as long as its operator. */
  expires_at: number | null;
}

/** What a presented token's digest finds: the token and its operator. */
export interface TokenOwner {
  token: OperatorTokenRow;
  operator: OperatorRow;
}

export interface NewOperator {
  name: string;
  scopes: readonly OperatorScope[];
  created_at: number;
  expires_at: number | null;
}

export interface NewOperatorToken {
  token_id: string;
  operator: string;
  /** Hex SHA-256 of the token. */
  sha256: string;
  created_at: number;
}

/**
 * How often an operator's `last_used_at` is written at most: a token that opens the admin API
 * every second costs one write a minute, not one per request. @default 60000
 */
export const LAST_USED_EVERY_MS = 60_000;

/** The scopes an operator holds: every scope for root (`*`), in the catalogue's order. */
export function operatorScopes(row: Pick<OperatorRow, 'scopes'>): OperatorScope[] {
  const stored = JSON.parse(row.scopes) as string[];
  if (stored.includes('*')) return [...OPERATOR_SCOPES];
  return OPERATOR_SCOPES.filter((scope) => stored.includes(scope));
}

/** The scopes as stored: known ones, once each, in the catalogue's order. */
export const storedScopes = (scopes: readonly OperatorScope[]): string => JSON.stringify(OPERATOR_SCOPES.filter((s) => scopes.includes(s)));

export function operatorStatus(row: Pick<OperatorRow, 'expires_at' | 'revoked_at'>, now: number): OperatorStatus {
  if (row.revoked_at !== null) return 'revoked';
  if (row.expires_at !== null && row.expires_at <= now) return 'expired';
  return 'active';
}

/** Whether a token works at `now` (its operator aside). */
export const tokenLive = (token: Pick<OperatorTokenRow, 'expires_at'>, now: number): boolean =>
  token.expires_at === null || token.expires_at > now;

export interface OperatorsTable {
  /** Add an operator (inside `Store.mutate`). */
  insert(op: NewOperator): Promise<void>;
  /** Add a token, living as long as its operator, by its digest (inside `Store.mutate`). */
  addToken(token: NewOperatorToken): Promise<void>;
  byName(name: string): Promise<OperatorRow | undefined>;
  /** Every operator, root first, then by name. */
  list(): Promise<OperatorRow[]>;
  /** Every token of every operator (for the list), or of one. */
  tokens(name?: string): Promise<OperatorTokenRow[]>;
  /** The token whose SHA-256 (hex) is `sha256`, with its operator; found whatever their state. */
  byTokenHash(sha256: string): Promise<TokenOwner | undefined>;
  /** The operator's tokens that would work past `until` stop then (now: at once; later: a rotation's grace). */
  expireTokens(name: string, until: number): Promise<void>;
  /** Whether this revoked the operator (false: it already was, or does not exist). */
  revoke(name: string, now: number): Promise<boolean>;
  /** Record a use at `now`, unless one was recorded in the last {@link LAST_USED_EVERY_MS}. */
  touch(name: string, now: number): Promise<void>;
}
