/**
 * Operators: named holders of the admin API, each with its own bearer token and a
 * set of scopes, shared by control (checks tokens and scopes, stores operators) and `svcctl`.
 *
 * An operator token is `svc_op_` followed by the base58 form of 32 CSPRNG bytes, like a beta
 * key. Only its SHA-256 is stored; the plaintext exists once, in the answer to `operators add`
 * or `operators rotate`. The bootstrap admin token (`admin.token` in the data dir, or
 * `SVC_ADMIN_TOKEN`) is the operator `root`, which holds every scope.
 *
 * Every admin route needs exactly one scope (`ADMIN_ROUTE_SCOPES`, scopes.ts): every GET needs
 * `read`; a write needs the scope of what it changes.
 */
import { z } from 'zod';
import { ExpiresInSeconds, GraceSeconds } from './admin';
import { OPERATOR_SCOPES } from './scopes';
import { IsoTime } from './wire';

export { ACTION_SCOPED_ROUTES, ADMIN_ROUTE_SCOPES, OPERATOR_SCOPES, SCOPE_DESCRIPTIONS, routeScope, type OperatorScope } from './scopes';
export {
  OPERATOR_TOKEN_PREFIX,
  generateOperatorToken,
  hashOperatorToken,
  isOperatorTokenShaped,
  operatorTokenStub,
} from './operator-token';

/** The bootstrap admin token's operator: every scope, never stored as a token, named so in the audit log. */
export const ROOT_OPERATOR = 'root';
/** The audit's `token_id` for root's token: the data dir's `admin.token` (or the one the controls on a database share). */
export const ROOT_TOKEN_ID = 'root';
/** The audit's `token_id` for root's token when it comes from `SVC_ADMIN_TOKEN`. */
export const ROOT_ENV_TOKEN_ID = 'root-env';

// ---------------------------------------------------------------------------------------
// Wire shapes

const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** An operator's name: lower case letters, digits, `_` and `-`, 1–63 characters, starting with a letter or digit. */
export const OperatorName = z
  .string()
  .regex(NAME_PATTERN, { message: 'must match [a-z0-9][a-z0-9_-]{0,62}' })
  .describe('the operator’s name: `[a-z0-9][a-z0-9_-]{0,62}`');

export const OperatorScopeSchema = z.enum(OPERATOR_SCOPES, { message: `must be one of ${OPERATOR_SCOPES.join(', ')}` });

export const AddOperatorRequest = z
  .object({
    name: OperatorName.refine((name) => name !== ROOT_OPERATOR, { message: `${ROOT_OPERATOR} is reserved for the bootstrap admin token` }),
    scopes: z
      .array(OperatorScopeSchema)
      .min(1)
      .max(OPERATOR_SCOPES.length * 2),
    expires_in_seconds: ExpiresInSeconds.optional(),
  })
  .strict();
export type AddOperatorRequest = z.infer<typeof AddOperatorRequest>;

export const RotateOperatorRequest = z
  .object({
    grace_seconds: GraceSeconds.optional().describe('how long the tokens it replaces keep working (default 0: they stop at once)'),
  })
  .strict();
export type RotateOperatorRequest = z.infer<typeof RotateOperatorRequest>;

export const OPERATOR_STATUSES = ['active', 'expired', 'revoked'] as const;
export const OperatorStatus = z.enum(OPERATOR_STATUSES);
export type OperatorStatus = z.infer<typeof OperatorStatus>;

/** One token of an operator that still works (never the token, never its hash). */
export const OperatorTokenView = z.strictObject({
  token_id: z.string(),
  created_at: IsoTime,
  /** Null while it works as long as the operator does; set when a rotation gave it a grace. */
  expires_at: IsoTime.nullable(),
});
export type OperatorTokenView = z.infer<typeof OperatorTokenView>;

export const OperatorView = z.strictObject({
  name: z.string(),
  scopes: z.array(OperatorScopeSchema),
  status: OperatorStatus,
  created_at: IsoTime,
  expires_at: IsoTime.nullable(),
  revoked_at: IsoTime.nullable(),
  /** When one of its tokens last opened the admin API (kept to the minute). */
  last_used_at: IsoTime.nullable(),
  /** Its tokens that work now; root's is the bootstrap admin token (`root`). */
  tokens: z.array(OperatorTokenView),
});
export type OperatorView = z.infer<typeof OperatorView>;

/** `GET /_admin/v1/operators`: root first, then by name. */
export const OperatorList = z.strictObject({ operators: z.array(OperatorView) });
export type OperatorList = z.infer<typeof OperatorList>;

/** Answer to add and rotate: the only place the operator's token ever appears. */
export const IssuedOperatorToken = z.strictObject({
  name: z.string(),
  token: z.string().describe('`svc_op_…`: shown this once, only its SHA-256 is stored'),
  token_id: z.string(),
  scopes: z.array(OperatorScopeSchema),
  created_at: IsoTime,
  expires_at: IsoTime.nullable(),
});
export type IssuedOperatorToken = z.infer<typeof IssuedOperatorToken>;

/** Answer to rotate: the new token, and the tokens it replaced with when each stops working. */
export const RotatedOperatorToken = IssuedOperatorToken.extend({
  replaced: z.array(z.strictObject({ token_id: z.string(), expires_at: IsoTime })),
});
export type RotatedOperatorToken = z.infer<typeof RotatedOperatorToken>;

/** Answer to revoke: the operator, and whether this call revoked it (false: it already was). */
export const OperatorRevoked = OperatorView.extend({ changed: z.boolean() });
export type OperatorRevoked = z.infer<typeof OperatorRevoked>;
