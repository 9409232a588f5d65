/** How the admin API's operations are written: the admin token, its errors, and the usual answers. */
import type { z } from 'zod';
import type { ErrorCode } from '../errors';
import type { Answer, Named, Operation, Parameter } from './operation';
import { BODY_ERRORS, EDGE_ERRORS } from './common';

const AUTH_ERRORS: readonly ErrorCode[] = [...EDGE_ERRORS, 'svc_unauthorized'];

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

/** An admin API operation: admin token, its errors, and the body errors when it takes a body. */
export function admin(method: Operation['method'], op: AdminOp): Operation {
  const { body, optionalBody, errors = [], ...rest } = op;
  return {
    method,
    security: ['adminToken'],
    ...rest,
    ...(body ? { body: { schema: body, required: optionalBody !== true } } : {}),
    errors: [...AUTH_ERRORS, ...(body ? BODY_ERRORS : []), ...errors],
  };
}

export const ok = (description: string, json: Named): Answer => ({ status: 200, description, json });
export const created = (description: string, json: Named): Answer => ({ status: 201, description, json });
