/**
 * Control's own listener (docs/design.md §2, §4, §10): the admin API under `/_admin/v1/` (admin token),
 * here; the sync API gateways use under `/_sync/v1/` (sync token) and `/metrics` (metrics
 * token), in `sync.ts`; the webhook control calls, in `webhooks.ts`. Served at
 * `{control}/_admin/v1/openapi.json`, behind the admin token.
 */
import {
  FLAG_NAMES,
  AddChangelogRequest,
  AuditEntry,
  AuditList,
  AuditQuery,
  ChangelogEntry,
  ChangelogList,
  ChangelogQuery,
  CreateEndpointRequest,
  EndpointChange,
  EndpointList,
  EndpointRemoved,
  EndpointView,
  FlagChange,
  FlagList,
  FlagView,
  IssueKeyRequest,
  IssuedKey,
  KeyChange,
  KeyList,
  KeyListQuery,
  KeyRevoked,
  KeyView,
  LiftKeyRequest,
  RotateKeyRequest,
  SetFlagRequest,
  StatusView,
  UpdateEndpointRequest,
  WalletRequest,
} from '../admin';
import { ApplicationView, DeliveryAttemptView } from '../applications';
import { GatewayStatus, GatewayWeightChange, GatewaysView, SetGatewayWeightRequest, WaitRequest, WaitResult } from '../gateways';
import { OperatorView } from '../operators';
import { BalanceView, BatchView, PayoutLine, PoolView, SettlerStatus } from '../settlement';
import { APPLICATION_OPERATIONS } from './admin-applications';
import { MONEY_OPERATIONS, PENDING_APPROVAL } from './admin-money';
import { OPERATOR_OPERATIONS } from './admin-operators';
import { APPROVAL_OPERATIONS } from './admin-approvals';
import { ACCOUNT_OPERATIONS } from './admin-accounts';
import { LP_OPERATIONS } from './admin-lps';
import { admin, created, ok } from './admin-op';
import { buildDocument } from './build';
import type { JsonObject, Operation } from './operation';
import { OpenApiDocument, REQUEST_RULES, pathParam } from './common';
import { SYNC_OPERATIONS } from './sync';
import { WEBHOOKS } from './webhooks';

const KEY_ID = pathParam('id', 'the key id (`key_…`)');
const ENDPOINT_ID = pathParam('id', 'the endpoint id');
const FLAG_NAME = pathParam('name', `${FLAG_NAMES.map((name) => `\`${name}\``).join(' or ')} (also as \`system_flags.<name>\`)`);
const GATEWAY_ID = pathParam('id', 'the gateway id (`gateway.id`)');

export const ADMIN_OPERATIONS: readonly Operation[] = [
  // Keys
  admin('post', {
    path: '/_admin/v1/keys',
    operationId: 'issueKey',
    summary: 'Issue a key',
    description:
      'The answer is the only place the plaintext `key` ever appears; only its SHA-256 is stored. A `wallet` is the wallet of the key’s own account: with `account` it is refused (400, field `wallet`: the account’s wallet is set with `PUT /_admin/v1/accounts/{id}/wallet`). With `money.approvals: 2`, a `wallet` is refused (409 `svc_conflict`, `reason: two_person`): attaching one is a two-person action (`PUT /_admin/v1/keys/{id}/wallet`).',
    tag: 'keys',
    body: IssueKeyRequest,
    answers: [created('The key, with its plaintext this once', { IssuedKey })],
    errors: ['svc_conflict'],
  }),
  admin('get', {
    path: '/_admin/v1/keys',
    operationId: 'listKeys',
    summary: 'One page of keys, newest first',
    tag: 'keys',
    query: KeyListQuery,
    answers: [ok('Keys; follow `next_cursor` until it is null', { KeyList })],
  }),
  admin('get', {
    path: '/_admin/v1/keys/{id}',
    operationId: 'getKey',
    summary: 'One key',
    tag: 'keys',
    params: [KEY_ID],
    answers: [ok('The key (never its plaintext)', { KeyView })],
    errors: ['svc_not_found'],
  }),
  admin('post', {
    path: '/_admin/v1/keys/{id}/revoke',
    operationId: 'revokeKey',
    summary: 'Revoke a key',
    tag: 'keys',
    params: [KEY_ID],
    answers: [ok('The key; `changed` is false when it was already revoked', { KeyRevoked })],
    errors: ['svc_not_found'],
  }),
  admin('post', {
    path: '/_admin/v1/keys/{id}/rotate',
    operationId: 'rotateKey',
    summary: 'Add a new secret; the old ones keep working for the grace period',
    tag: 'keys',
    params: [KEY_ID],
    body: RotateKeyRequest,
    optionalBody: true,
    answers: [ok('The key with its new plaintext, this once', { IssuedKey })],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
  admin('post', {
    path: '/_admin/v1/keys/{id}/lift',
    operationId: 'liftKey',
    summary: 'A temporary limit with an expiry',
    tag: 'keys',
    params: [KEY_ID],
    body: LiftKeyRequest,
    answers: [ok('The key', { KeyChange })],
    errors: ['svc_not_found'],
  }),
  admin('put', {
    path: '/_admin/v1/keys/{id}/wallet',
    operationId: 'attachWallet',
    summary: "Attach the payout wallet of the key's account",
    description:
      'The wallet is the key’s account’s (every key of the account shows it; audited with `account_id`): it decides where the account’s refunds are paid. With `money.approvals: 2` a two-person action (202).',
    tag: 'keys',
    params: [KEY_ID],
    body: WalletRequest,
    answers: [ok('The key', { KeyChange }), PENDING_APPROVAL],
    errors: ['svc_not_found'],
  }),
  admin('delete', {
    path: '/_admin/v1/keys/{id}/wallet',
    operationId: 'detachWallet',
    summary: "Detach the payout wallet of the key's account",
    description: 'With `money.approvals: 2` a two-person action (202).',
    tag: 'keys',
    params: [KEY_ID],
    answers: [ok('The key', { KeyChange }), PENDING_APPROVAL],
    errors: ['svc_not_found'],
  }),

  // Flags
  admin('get', {
    path: '/_admin/v1/flags',
    operationId: 'listFlags',
    summary: 'Every runtime flag',
    tag: 'flags',
    answers: [ok('The flags and the state version', { FlagList })],
  }),
  admin('get', {
    path: '/_admin/v1/flags/{name}',
    operationId: 'getFlag',
    summary: 'One flag',
    tag: 'flags',
    params: [FLAG_NAME],
    answers: [ok('The flag', { FlagView })],
    errors: ['svc_not_found'],
  }),
  admin('put', {
    path: '/_admin/v1/flags/{name}',
    operationId: 'setFlag',
    summary: 'Set a flag; a change is written to the public changelog',
    tag: 'flags',
    params: [FLAG_NAME],
    body: SetFlagRequest,
    answers: [ok('The flag; `changed` is false when it already had the value', { FlagChange })],
    errors: ['svc_not_found'],
  }),

  // Endpoints
  admin('post', {
    path: '/_admin/v1/endpoints',
    operationId: 'addEndpoint',
    summary: 'Register an upstream',
    description: 'Injected header values are write-only: answers list their names.',
    tag: 'endpoints',
    body: CreateEndpointRequest,
    answers: [created('The endpoint', { EndpointChange })],
    errors: ['svc_conflict'],
  }),
  admin('get', {
    path: '/_admin/v1/endpoints',
    operationId: 'listEndpoints',
    summary: 'Every endpoint',
    tag: 'endpoints',
    answers: [ok('The endpoints', { EndpointList })],
  }),
  admin('get', {
    path: '/_admin/v1/endpoints/{id}',
    operationId: 'getEndpoint',
    summary: 'One endpoint',
    tag: 'endpoints',
    params: [ENDPOINT_ID],
    answers: [ok('The endpoint', { EndpointView })],
    errors: ['svc_not_found'],
  }),
  admin('patch', {
    path: '/_admin/v1/endpoints/{id}',
    operationId: 'updateEndpoint',
    summary: 'Change an endpoint',
    tag: 'endpoints',
    params: [ENDPOINT_ID],
    body: UpdateEndpointRequest,
    answers: [ok('The endpoint', { EndpointChange })],
    errors: ['svc_not_found'],
  }),
  admin('delete', {
    path: '/_admin/v1/endpoints/{id}',
    operationId: 'removeEndpoint',
    summary: 'Remove an endpoint (soft: past outcomes keep pointing at it)',
    tag: 'endpoints',
    params: [ENDPOINT_ID],
    answers: [ok('Removed', { EndpointRemoved })],
    errors: ['svc_not_found'],
  }),

  // Changelog, audit, status, gateways
  admin('get', {
    path: '/_admin/v1/changelog',
    operationId: 'listChangelog',
    summary: 'The changelog, newest first',
    tag: 'changelog',
    query: ChangelogQuery,
    answers: [ok('Entries', { ChangelogList })],
  }),
  admin('post', {
    path: '/_admin/v1/changelog',
    operationId: 'addChangelogNotice',
    summary: 'Publish a notice',
    tag: 'changelog',
    body: AddChangelogRequest,
    answers: [created('The entry', { ChangelogEntry })],
  }),
  admin('get', {
    path: '/_admin/v1/audit',
    operationId: 'listAudit',
    summary: 'The audit log, newest first: who (operator and token id) did what, when',
    description:
      'Filters on the server: `operator` (the actor), `action` (exact, or a family: `keys` is `keys` and every `keys.…`), `since` (ISO 8601). Pass `next_cursor` back as `cursor` until it is null.',
    tag: 'changelog',
    query: AuditQuery,
    answers: [ok('Entries; follow `next_cursor` until it is null', { AuditList })],
  }),
  admin('get', {
    path: '/_admin/v1/status',
    operationId: 'getStatus',
    summary: 'Control, listeners, flags, counts, bootstrap, settler and gateways',
    tag: 'status',
    answers: [ok('What `svcctl status` shows', { StatusView })],
  }),
  admin('get', {
    path: '/_admin/v1/gateways',
    operationId: 'listGateways',
    summary: 'Every gateway: connected and live, weight, limit share, the state version it applied',
    tag: 'status',
    answers: [ok('Gateways', { GatewaysView })],
  }),
  admin('put', {
    path: '/_admin/v1/gateways/{id}/weight',
    operationId: 'setGatewayWeight',
    summary: 'Weight a gateway in the split of key limits; control re-divides and pushes the shares at once',
    tag: 'status',
    params: [GATEWAY_ID],
    body: SetGatewayWeightRequest,
    answers: [
      ok('The gateway and every share after the change; `changed` is false when it already had the weight', { GatewayWeightChange }),
    ],
    errors: ['svc_not_found'],
  }),
  admin('post', {
    path: '/_admin/v1/sync/wait',
    operationId: 'waitForVersion',
    summary: 'Wait until every connected gateway applied a state version',
    tag: 'status',
    body: WaitRequest,
    answers: [ok('Complete, or the gateways still pending when `timeout_ms` ran out', { WaitResult })],
  }),
  admin('get', {
    path: '/_admin/v1/openapi.json',
    operationId: 'getOpenApi',
    summary: 'This document',
    tag: 'status',
    answers: [ok('The OpenAPI 3.1 document of control’s listener', { OpenApiDocument })],
  }),
  ...APPLICATION_OPERATIONS,
  ...MONEY_OPERATIONS,
  ...OPERATOR_OPERATIONS,
  ...APPROVAL_OPERATIONS,
  ...ACCOUNT_OPERATIONS,
  ...LP_OPERATIONS,
];

/** Control's OpenAPI document: admin, sync and metrics on the control listener. */
export function adminDocument(): JsonObject {
  return buildDocument(
    {
      title: 'svc control: admin and sync API',
      description:
        "Control's listener ({control}, default http://127.0.0.1:7073): the admin API `svcctl` uses (`Authorization: Bearer <token>`: root's, the bootstrap admin token with every scope, or an operator's `svc_op_…` token; each operation needs one scope, `x-svc-scope`, else 403 `svc_forbidden_scope`), the sync API gateways use (sync token) and `/metrics` (metrics token); without the right token, 401 `svc_unauthorized`. Bodies are JSON with snake_case fields; every mutation answers with the state `version` it produced and is recorded in the audit log. Amounts are integer micro-units. " +
        REQUEST_RULES,
      server: { description: 'control (default http://127.0.0.1:7073)' },
      tags: [
        { name: 'keys', description: 'Beta keys (docs/design.md §5)' },
        { name: 'accounts', description: 'Accounts: who holds prepaid money; every key belongs to one' },
        { name: 'flags', description: 'Runtime flags' },
        { name: 'endpoints', description: 'Wrapped upstreams' },
        { name: 'changelog', description: 'Public changelog and the audit log' },
        { name: 'status', description: 'Control, gateways, propagation and this document' },
        { name: 'applications', description: 'Access applications (docs/design.md §8)' },
        { name: 'money', description: 'Settler, pool, ledger and payouts (docs/design.md §6)' },
        {
          name: 'lps',
          description: 'Liquidity providers: who owns the pool’s capital, in shares, and the withdrawal queue (docs/money.md)',
        },
        { name: 'operators', description: 'Operators: named tokens with scopes, and money actions waiting for a second operator' },
        { name: 'sync', description: 'Gateway ↔ control sync (docs/design.md §4)' },
        { name: 'metrics', description: 'Prometheus metrics' },
      ],
      schemes: ['adminToken', 'syncToken', 'metricsToken'],
      operations: [...ADMIN_OPERATIONS, ...SYNC_OPERATIONS],
      webhooks: WEBHOOKS,
    },
    {
      KeyView,
      EndpointView,
      FlagView,
      ChangelogEntry,
      AuditEntry,
      GatewayStatus,
      ApplicationView,
      DeliveryAttemptView,
      SettlerStatus,
      BatchView,
      PoolView,
      BalanceView,
      PayoutLine,
      OperatorView,
    },
  );
}
