/**
 * How the admin API's operations are written: the admin token (root's or an operator's), its
 * errors, the scope each needs (`x-svc-scope` and a line of the description, from
 * `ADMIN_ROUTE_SCOPES`), and the usual answers.
 */
import type { z } from 'zod';
import { InvariantError } from '../coded-error';
import type { ErrorCode } from '../errors';
import type { Answer, Named, Operation, Parameter } from './operation';
import { SCOPE_DESCRIPTIONS, routeScope, type OperatorScope } from '../scopes';
import { BODY_ERRORS, EDGE_ERRORS, STORE_ERRORS } from './common';

/** Every admin request is authenticated against the database (root's revocation, operators' tokens): 503 while it cannot be reached. */
const AUTH_ERRORS: readonly ErrorCode[] = [...EDGE_ERRORS, 'svc_unauthorized', 'svc_forbidden_scope', ...STORE_ERRORS];

export interface AdminOp {
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  query?: z.ZodObject;
  params?: readonly Parameter[];
  /** JSON request body; `optional` when an empty body means `{}`. */
  body?: z.ZodType;
  optionalBody?: boolean;
  answers: readonly Answer[];
  /** Errors beyond authentication and the edge (404, 409…). */
  errors?: readonly ErrorCode[];
}

/** The scope the admin route at OpenAPI `path` (`{param}`) needs; a route without one is a programming error. */
export function scopeOf(method: Operation['method'], path: string): OperatorScope {
  const scope = routeScope(method.toUpperCase(), path.replace(/\{([^}]+)\}/g, ':$1'));
  if (scope === undefined)
    throw new InvariantError(`${method.toUpperCase()} ${path} has no scope in ADMIN_ROUTE_SCOPES (protocol/operators.ts)`);
  return scope;
}

/** An admin API operation: admin token, its scope, its errors, and the body errors when it takes a body. */
export function admin(method: Operation['method'], op: AdminOp): Operation {
  const { body, optionalBody, errors = [], description, ...rest } = op;
  const scope = scopeOf(method, op.path);
  const needs = `Scope: \`${scope}\` (${SCOPE_DESCRIPTIONS[scope]}); an operator's token without it gets 403 \`svc_forbidden_scope\`.`;
  return {
    method,
    security: ['adminToken'],
    ...rest,
    description: description === undefined ? needs : `${description}\n\n${needs}`,
    ...(body ? { body: { schema: body, required: optionalBody !== true } } : {}),
    errors: [...AUTH_ERRORS, ...(body ? BODY_ERRORS : []), ...errors],
    extensions: { 'x-svc-scope': scope },
  };
}

export const ok = (description: string, json: Named): Answer => ({ status: 200, description, json });
export const created = (description: string, json: Named): Answer => ({ status: 201, description, json });
