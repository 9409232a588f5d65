/** The admin API's operator operations: add, list, show, revoke, rotate. Part of control's document (`admin.ts`). */
import {
  AddOperatorRequest,
  IssuedOperatorToken,
  OperatorList,
  OperatorRevoked,
  OperatorView,
  RotateOperatorRequest,
  RotatedOperatorToken,
} from '../operators';
import type { Operation } from './operation';
import { admin, created, ok } from './admin-op';
import { PENDING_APPROVAL } from './admin-money';
import { pathParam } from './common';

const OPERATOR_NAME = pathParam('name', 'the operator’s name (`root` for the bootstrap admin token)');

export const OPERATOR_OPERATIONS: readonly Operation[] = [
  admin('get', {
    path: '/_admin/v1/operators',
    operationId: 'listOperators',
    summary: 'Every operator, root first: scopes, status, last use, the ids of the tokens that work (never a token)',
    tag: 'operators',
    answers: [ok('Operators', { OperatorList })],
  }),
  admin('post', {
    path: '/_admin/v1/operators',
    operationId: 'addOperator',
    summary: 'Add an operator with its scopes; its token is in this answer only',
    description:
      'Names match `[a-z0-9][a-z0-9_-]{0,62}`; `root` is reserved (400 `svc_bad_request`), as is an unknown scope. A name in use, or once used by a revoked operator, is 409 `svc_conflict`. The caller grants only scopes it holds itself (403 `svc_forbidden_scope` naming the first it lacks). With `money.approvals: 2`, an operator who gets `money` or `operators` is added only once a second operator approves (202); the token is then made and answered to the approver. Only the token’s SHA-256 is stored.',
    tag: 'operators',
    body: AddOperatorRequest,
    answers: [created('The operator’s token, this once', { IssuedOperatorToken }), PENDING_APPROVAL],
    errors: ['svc_conflict'],
  }),
  admin('get', {
    path: '/_admin/v1/operators/{name}',
    operationId: 'getOperator',
    summary: 'One operator',
    tag: 'operators',
    params: [OPERATOR_NAME],
    answers: [ok('The operator', { OperatorView })],
    errors: ['svc_not_found'],
  }),
  admin('post', {
    path: '/_admin/v1/operators/{name}/revoke',
    operationId: 'revokeOperator',
    summary: 'Revoke an operator: its tokens stop working at once, on every control of the database',
    description:
      'Root is revoked by no one (409 `svc_conflict`, `reason: root`). The caller revokes only an operator whose scopes are all among its own (403 `svc_forbidden_scope` naming the first it lacks). Refused with 409 `svc_conflict` when no other active operator with a working token holds the `operators` scope (on an install whose root was revoked by an earlier version): someone must be left to manage operators. `changed` is false when it was revoked already.',
    tag: 'operators',
    params: [OPERATOR_NAME],
    answers: [ok('The operator', { OperatorRevoked })],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
  admin('post', {
    path: '/_admin/v1/operators/{name}/rotate',
    operationId: 'rotateOperator',
    summary: 'A new token for an operator; the ones it replaces stop at once, or after `grace_seconds`',
    description:
      'Root’s token is the bootstrap admin token and is rotated by root only, outside the API: root asking is told so (400 `svc_bad_request`), anyone else is refused (403 `svc_forbidden_scope`). The caller rotates only an operator whose scopes are all among its own (403 `svc_forbidden_scope` naming the first it lacks); a revoked or expired operator is 409 `svc_conflict`. With `money.approvals: 2`, another operator’s token, when that operator holds `money` or `operators`, is rotated only once a second operator approves (202): the new token would work as that operator; it is made then and answered to the approver.',
    tag: 'operators',
    params: [OPERATOR_NAME],
    body: RotateOperatorRequest,
    optionalBody: true,
    answers: [ok('The new token, this once, and when each replaced one stops', { RotatedOperatorToken }), PENDING_APPROVAL],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
];
