/**
 * The scopes of operators (protocol/operators.ts) and the one table of which scope each admin
 * route needs, apart from the wire shapes (no zod) so svcctl's command table can name the
 * scopes without loading them.
 */

export const OPERATOR_SCOPES = [
  'read',
  'keys',
  'flags',
  'endpoints',
  'applications',
  'gateways',
  'settler',
  'money',
  'receipts',
  'operators',
] as const;
export type OperatorScope = (typeof OPERATOR_SCOPES)[number];

/** What each scope allows: docs/operators.md's "Running svc as a team" table and the OpenAPI descriptions say the same. */
export const SCOPE_DESCRIPTIONS: Readonly<Record<OperatorScope, string>> = {
  read: 'every GET of the admin API but the liquidity providers’ (`money`), and waiting for the gateways (`sync/wait`)',
  keys: 'issue, revoke, rotate and lift keys, and add the accounts they belong to (and set their low-balance threshold)',
  flags: 'set flags and publish changelog notices',
  endpoints: 'add, change and remove endpoints',
  applications: 'record, approve, reject and redeliver access applications',
  gateways: "set a gateway's weight",
  settler: 'pause, resume and run the settler once',
  money:
    "fund the pool, pause and resume its coverage, mark payouts paid, deposit into accounts, set their refill rules, attach and detach an account's payout wallet (or a key's account's), and add, show, deposit for and withdraw for liquidity providers",
  receipts: 'rotate the receipt signing key and reissue a receipt',
  operators: 'add, revoke and rotate operators, within the scopes the caller holds itself',
};

/**
 * The scope of every admin route, by method and router pattern (`:param`). A route missing here
 * is refused to every caller, root included (403), and test/control/operators.ts fails; the
 * OpenAPI document names each operation's scope from it (`x-svc-scope`).
 */
export const ADMIN_ROUTE_SCOPES: Readonly<Record<string, OperatorScope>> = {
  'POST /_admin/v1/keys': 'keys',
  'GET /_admin/v1/keys': 'read',
  'GET /_admin/v1/keys/:id': 'read',
  'POST /_admin/v1/accounts': 'keys',
  'GET /_admin/v1/accounts': 'read',
  'GET /_admin/v1/accounts/:id': 'read',
  'PATCH /_admin/v1/accounts/:id': 'keys',
  'POST /_admin/v1/accounts/:id/deposit': 'money',
  'PUT /_admin/v1/accounts/:id/wallet': 'money',
  'DELETE /_admin/v1/accounts/:id/wallet': 'money',
  'PUT /_admin/v1/accounts/:id/refill': 'money',
  'DELETE /_admin/v1/accounts/:id/refill': 'money',
  'POST /_admin/v1/keys/:id/revoke': 'keys',
  'POST /_admin/v1/keys/:id/rotate': 'keys',
  'POST /_admin/v1/keys/:id/lift': 'keys',
  'PUT /_admin/v1/keys/:id/wallet': 'money',
  'DELETE /_admin/v1/keys/:id/wallet': 'money',
  'GET /_admin/v1/flags': 'read',
  'GET /_admin/v1/flags/:name': 'read',
  'PUT /_admin/v1/flags/:name': 'flags',
  'POST /_admin/v1/endpoints': 'endpoints',
  'GET /_admin/v1/endpoints': 'read',
  'GET /_admin/v1/endpoints/:id': 'read',
  'PATCH /_admin/v1/endpoints/:id': 'endpoints',
  'DELETE /_admin/v1/endpoints/:id': 'endpoints',
  'GET /_admin/v1/changelog': 'read',
  'POST /_admin/v1/changelog': 'flags',
  'GET /_admin/v1/audit': 'read',
  'GET /_admin/v1/status': 'read',
  'GET /_admin/v1/gateways': 'read',
  'PUT /_admin/v1/gateways/:id/weight': 'gateways',
  'POST /_admin/v1/sync/wait': 'read',
  'GET /_admin/v1/openapi.json': 'read',
  'GET /_admin/v1/applications': 'read',
  'GET /_admin/v1/applications/:id': 'read',
  'POST /_admin/v1/applications': 'applications',
  'POST /_admin/v1/applications/:id/approve': 'applications',
  'POST /_admin/v1/applications/:id/reject': 'applications',
  'POST /_admin/v1/applications/:id/redeliver': 'applications',
  'GET /_admin/v1/settler': 'read',
  'POST /_admin/v1/settler/pause': 'settler',
  'POST /_admin/v1/settler/resume': 'settler',
  'POST /_admin/v1/settler/run-once': 'settler',
  'GET /_admin/v1/pool': 'read',
  'POST /_admin/v1/pool/fund': 'money',
  'POST /_admin/v1/pool/pause': 'money',
  'POST /_admin/v1/pool/resume': 'money',
  'GET /_admin/v1/ledger/verify': 'read',
  'GET /_admin/v1/ledger/balances': 'read',
  'GET /_admin/v1/payouts': 'read',
  'POST /_admin/v1/payouts/mark-paid': 'money',
  'POST /_admin/v1/receipts/rotate-key': 'receipts',
  'POST /_admin/v1/receipts/:batch/reissue': 'receipts',
  'GET /_admin/v1/operators': 'read',
  'GET /_admin/v1/operators/:name': 'read',
  'POST /_admin/v1/operators': 'operators',
  'POST /_admin/v1/operators/:name/revoke': 'operators',
  'POST /_admin/v1/operators/:name/rotate': 'operators',
  'GET /_admin/v1/approvals': 'read',
  'GET /_admin/v1/approvals/:id': 'read',
  'POST /_admin/v1/approvals/:id/approve': 'money',
  'POST /_admin/v1/approvals/:id/reject': 'money',
  'GET /_admin/v1/lps': 'money',
  'POST /_admin/v1/lps': 'money',
  'GET /_admin/v1/lps/:id': 'money',
  'POST /_admin/v1/lps/:id/deposit': 'money',
  'POST /_admin/v1/lps/:id/withdrawals': 'money',
  'GET /_admin/v1/lp-withdrawals': 'money',
  'POST /_admin/v1/lp-withdrawals/:id/cancel': 'money',
};

/**
 * Routes whose table scope stands for the scope of what they act on: approving or rejecting a
 * two-person action needs that action's own scope (`money`, `receipts` for a receipt key
 * rotation, `operators` for an operator added: protocol/approvals.ts), checked by the route once
 * it has read the request. Before that, the listener lets through an operator holding any scope
 * such an action needs.
 */
export const ACTION_SCOPED_ROUTES: Readonly<Record<string, readonly OperatorScope[]>> = {
  'POST /_admin/v1/approvals/:id/approve': ['money', 'receipts', 'operators'],
  'POST /_admin/v1/approvals/:id/reject': ['money', 'receipts', 'operators'],
};

/** The scope an admin route needs (`method` upper case, `pattern` with `:param`s), or undefined for a route the table lacks. */
export function routeScope(method: string, pattern: string): OperatorScope | undefined {
  return ADMIN_ROUTE_SCOPES[`${method} ${pattern}`];
}
