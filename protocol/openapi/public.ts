/** The public read API ({api_url}, docs/design.md §7–8): the document served at `{api_url}/openapi.json`. */
import { z } from 'zod';
import { AccountAnswer, AccountCall, AccountCallsPage, AccountCallsQuery, AccountQuery } from '../account';
import { ApplicationInput, ApplicationReceipt } from '../applications';
import type { ErrorCode } from '../errors';
import { ProvidersAnswer, PublicChangelogAnswer, PublicChangelogQuery, StatusAnswer, Provider, PublicChangelogEntry } from '../public';
import { HealthAnswer } from '../wire';
import { BODY_ERRORS, EDGE_ERRORS, IF_NONE_MATCH, STORE_ERRORS, cachedAtom, cachedHtml, cachedJson, pathParam } from './common';
import type { JsonObject, Operation, Parameter } from './operation';
import { faviconRead, openApiRead, publicListenerDocument } from './public-listener';

/** What the listener itself may answer to any request: the per-IP limit, then the User-Agent allow-list. */
const LISTENER_ERRORS: readonly ErrorCode[] = ['svc_forbidden_user_agent', 'svc_rate_limited'];
const READ_ERRORS: readonly ErrorCode[] = [...EDGE_ERRORS, ...LISTENER_ERRORS];
/** A read of the database: 503 `svc_store_unavailable` while control cannot reach it. */
const STORE_READ_ERRORS: readonly ErrorCode[] = [...READ_ERRORS, ...STORE_ERRORS];

const HTML = 'text/html; charset=utf-8';

/**
 * The User-Agent allow-list (`control/public/ua-filter.ts`) as a header parameter, so that
 * clients generated from the document send an allowed User-Agent.
 */
export const USER_AGENT_PARAM: Parameter = {
  name: 'User-Agent',
  in: 'header',
  required: true,
  schema: z.string().min(1),
  description:
    'Only browsers and the products in `public.userAgentAllow` are served: by default `svc-monitor-sdk/<semver>` (e.g. `svc-monitor-sdk/0.1.0`, optionally followed by its runtime), which a client of this API may send as its own. Default command-line HTTP clients (curl, Wget, python-requests…), server runtimes and empty or unrecognised User-Agents get 403 `svc_forbidden_user_agent`, whose detail says how to resend.',
};

/** Paths served to any User-Agent: the default of `public.userAgentExemptPaths`. */
export const USER_AGENT_EXEMPT_PATHS: readonly string[] = ['/health'];

/** Every operation but the exempt ones documents the User-Agent rule. */
function withUserAgentRule(operations: readonly Operation[]): readonly Operation[] {
  return operations.map((op) =>
    USER_AGENT_EXEMPT_PATHS.includes(op.path) ? op : { ...op, params: [USER_AGENT_PARAM, ...(op.params ?? [])] },
  );
}

const read = (
  op: Omit<Operation, 'method' | 'security' | 'errors' | 'tag'> & {
    tag?: string;
    errors?: readonly ErrorCode[];
    security?: Operation['security'];
  },
): Operation => ({
  method: 'get',
  security: ['none'],
  tag: 'reads',
  errors: READ_ERRORS,
  ...op,
});

export const PUBLIC_OPERATIONS: readonly Operation[] = withUserAgentRule([
  read({
    path: '/health',
    operationId: 'getHealth',
    summary: 'Liveness of the public API',
    description:
      'Exactly `{"status":"ok","version":"v1"}`. Served to any User-Agent while `/health` is in `public.userAgentExemptPaths` (the default).',
    tag: 'health',
    answers: [{ status: 200, description: 'The public API is up', json: { HealthAnswer } }],
  }),
  openApiRead('the public API', READ_ERRORS),
  read({
    path: '/api/v1/providers',
    errors: STORE_READ_ERRORS,
    operationId: 'listProviders',
    summary: 'Providers with their tier and failure rate over the rolling window',
    description:
      '`failure_rate` is covered failures over calls excluding `client_error` and `caller_error`; tier `RELIABLE` below `tiers.reliableBelow`, `ELEVATED` up to `tiers.elevatedUpTo`, `HIGH_RISK` above, `UNRATED` under `tiers.minCalls` calls. Ids are opaque.',
    params: [IF_NONE_MATCH],
    answers: cachedJson('Every registered provider', { ProvidersAnswer }),
  }),
  read({
    path: '/api/v1/status',
    errors: STORE_READ_ERRORS,
    operationId: 'getStatus',
    summary: 'Bootstrap state, settler, beta gate, maintenance and the latest changelog',
    params: [IF_NONE_MATCH],
    answers: cachedJson('The status of the service', { StatusAnswer }),
  }),
  read({
    path: '/',
    operationId: 'getHomePage',
    summary: 'The landing page, for browsers (HTML, no JavaScript)',
    description:
      'What svc is, with links to the status, providers, activity and apply pages, this document and the Atom feeds. Only for a request whose `Accept` ranks `text/html` above JSON and `*/*` (a browser); any other request (the SDK, `Accept: application/json`) gets 404 `svc_not_found`. On this listener and the indexer, every error answered to such a browser is an HTML page with the status and the error code instead of problem+json.',
    tag: 'pages',
    params: [IF_NONE_MATCH],
    answers: cachedHtml('The landing page'),
    errors: [...READ_ERRORS, 'svc_not_found'],
  }),
  read({
    path: '/status',
    errors: STORE_READ_ERRORS,
    operationId: 'getStatusPage',
    summary: 'The status page (HTML, no JavaScript)',
    description:
      'Whether svc is working and has been: each provider\'s last 90 UTC days as bars coloured by tier with its uptime over 30 and 90 days, the incident history (maintenance periods with the operators\' note, days a provider was HIGH_RISK), then maintenance, the beta gate, the latest changes and, collapsed under "Details", the operator internals. Links to the providers, the activity page and both Atom feeds. Like every page: a strict CSP with a nonce per answer, cached with a weak `ETag`.',
    tag: 'pages',
    params: [IF_NONE_MATCH],
    answers: cachedHtml('The status page'),
  }),
  faviconRead(READ_ERRORS),
  read({
    path: '/providers',
    errors: STORE_READ_ERRORS,
    operationId: 'getProvidersPage',
    summary: 'The providers page (HTML, no JavaScript)',
    description:
      'One row per provider: opaque id and display name, tier (the rules in a legend), failure rate and calls over the window, p50/p99 latency and an SVG sparkline of the failure rate per hour. Sorted by tier (default) or failure rate through links; UNRATED providers come last in every order. Upstream URLs and endpoint ids never appear.',
    tag: 'pages',
    query: z.object({
      sort: z.enum(['tier', 'failure_rate']).optional().describe('order by tier (default) or by failure rate'),
      order: z.enum(['asc', 'desc']).optional().describe('asc (default): best tier or lowest rate first'),
    }),
    params: [IF_NONE_MATCH],
    answers: cachedHtml('The providers page'),
  }),
  read({
    path: '/providers/{id}',
    operationId: 'getProviderPage',
    summary: "One provider's page (HTML, no JavaScript)",
    description:
      'The same figures as `/providers`, an SVG bar chart of calls per hour by outcome (ok, latency breach, server error, network error, schema mismatch), and the last refunds with links to their batch receipts on the indexer.',
    tag: 'pages',
    params: [pathParam('id', 'the opaque provider id (`prv_…`) from `/api/v1/providers`'), IF_NONE_MATCH],
    answers: cachedHtml('The provider page'),
    errors: [...STORE_READ_ERRORS, 'svc_not_found'],
  }),
  read({
    path: '/changelog.atom',
    errors: STORE_READ_ERRORS,
    operationId: 'getChangelogFeed',
    summary: 'The public changelog as an Atom 1.0 feed',
    description:
      'One entry per changelog entry (the latest 50), newest first; entry ids are stable `urn:uuid:` names. The indexer serves the same feed without a User-Agent filter, for feed readers.',
    tag: 'pages',
    params: [IF_NONE_MATCH],
    answers: cachedAtom('The changelog feed'),
  }),
  read({
    path: '/status.atom',
    errors: STORE_READ_ERRORS,
    operationId: 'getStatusFeed',
    summary: 'The incident history as an Atom 1.0 feed',
    description:
      "The status page's incident history (the latest 50), newest first: one entry per maintenance period, with the operators' note, and one per day a provider was HIGH_RISK, with its failure rate. The indexer serves the same feed without a User-Agent filter, for feed readers.",
    tag: 'pages',
    params: [IF_NONE_MATCH],
    answers: cachedAtom('The incidents feed'),
  }),
  read({
    path: '/api/v1/account',
    operationId: 'getAccount',
    summary: "The agent's own account: its limit, calls by outcome, refunds and premiums over a window",
    description:
      'Read with the beta key itself (`Authorization: Bearer svc_beta_…`); a missing, unknown, revoked or expired key is 401 `svc_unauthorized`. `calls` counts every call started in the window (ending now), `outcomes` has one count per outcome. `refunds.settled` and `premiums.settled` are ledger money (refunds after clamps); `refunds.pending` and `premiums.pending` are an ESTIMATE: the price and premium the endpoints carry now, over the calls not settled yet (the one place the public API estimates money). Cached per key for at most `cache.statsTtlS` (`Cache-Control: private`, `Vary: Authorization`), never shared between keys.',
    tag: 'account',
    security: ['betaKey'],
    query: AccountQuery,
    params: [IF_NONE_MATCH],
    answers: cachedJson("The key's account", { AccountAnswer }),
    errors: [...STORE_READ_ERRORS, 'svc_unauthorized'],
  }),
  read({
    path: '/api/v1/account/calls',
    operationId: 'listAccountCalls',
    summary: "The agent's own calls, newest first, settled or not",
    description:
      'Read with the beta key itself, as `/api/v1/account`. `call_id` is the `X-Svc-Call-Id` the gateway answered (what `{indexer_url}/api/calls/{call_id}/proof` takes); `refund`, `premium` and `settled_batch` are null until the call is settled. Follow `next_before` for older calls.',
    tag: 'account',
    security: ['betaKey'],
    query: AccountCallsQuery,
    params: [IF_NONE_MATCH],
    answers: cachedJson("One page of the key's calls", { AccountCallsPage }),
    errors: [...STORE_READ_ERRORS, 'svc_unauthorized'],
  }),
  read({
    path: '/api/v1/changelog',
    errors: STORE_READ_ERRORS,
    operationId: 'listChangelog',
    summary: 'The public changelog, newest first',
    query: PublicChangelogQuery,
    params: [IF_NONE_MATCH],
    answers: cachedJson('Changelog entries (operator names are not published)', { PublicChangelogAnswer }),
  }),
  read({
    path: '/apply',
    operationId: 'getApplicationForm',
    summary: 'The access application form (HTML)',
    tag: 'applications',
    answers: [{ status: 200, description: 'The form', content: { type: HTML } }],
  }),
  read({
    path: '/apply/thanks',
    operationId: 'getApplicationThanks',
    summary: 'The page shown after a form submission',
    tag: 'applications',
    query: z.object({ id: z.string().optional().describe('the application id the form submission got') }),
    answers: [{ status: 200, description: 'Thank-you page', content: { type: HTML } }],
  }),
  {
    method: 'post',
    path: '/apply',
    operationId: 'submitApplicationForm',
    summary: 'Submit the application form',
    description:
      'The HTML form posts here. A stored submission is redirected to `/apply/thanks?id=…`; invalid answers get the form again with each field marked.',
    tag: 'applications',
    security: ['none'],
    body: { schema: ApplicationInput, contentTypes: ['application/x-www-form-urlencoded', 'application/json'] },
    answers: [
      { status: 303, description: 'Received: see the thank-you page', requiredHeaders: ['Location'] },
      { status: 400, description: 'The form again, with each invalid answer marked', content: { type: HTML } },
      {
        status: 429,
        description: 'The form again: too many applications from this address',
        content: { type: HTML },
        headers: ['Retry-After'],
      },
    ],
    errors: [...STORE_READ_ERRORS, ...BODY_ERRORS],
  },
  {
    method: 'post',
    path: '/api/v1/applications',
    operationId: 'submitApplication',
    summary: 'Apply for a beta key',
    description:
      'JSON or form-encoded, at most 128 KiB. Answers to questions not asked for the chosen `applicant_type` are ignored; `why` is required when it is asked. The same answers again within `applications.duplicateWindowS` are the same application (200, same id).',
    tag: 'applications',
    security: ['none'],
    body: { schema: ApplicationInput, contentTypes: ['application/json', 'application/x-www-form-urlencoded'] },
    answers: [
      { status: 201, description: 'Received; an answer follows within `answer_within_hours`', json: { ApplicationReceipt } },
      { status: 200, description: 'The same application was already received', json: { ApplicationReceipt } },
    ],
    errors: [...STORE_READ_ERRORS, ...BODY_ERRORS],
  },
]);

/** The public API's OpenAPI document. */
export function publicDocument(): JsonObject {
  return publicListenerDocument(
    {
      title: 'svc public read API',
      description:
        "Public reads of svc ({api_url}): providers and their reliability tiers, the status page, the changelog, access applications, and an agent's own account (read with its beta key). Only browsers and `svc-monitor-sdk/<version>` User-Agents are served (403 `svc_forbidden_user_agent` otherwise); each client IP may make `limits.publicCount` requests per `limits.publicWindowS` (429 with `Retry-After`, `RateLimit`, `RateLimit-Policy`). Amounts are integer micro-units; ids are opaque. ",
      server: { description: '{api_url} (default http://127.0.0.1:7071)' },
      tags: [
        { name: 'reads', description: 'Providers, status and changelog (cached, with ETag)' },
        { name: 'account', description: "An agent's own account, read with its beta key (cached per key, with ETag)" },
        { name: 'pages', description: 'Server-rendered pages and Atom feeds' },
        { name: 'applications', description: 'Access applications (docs/design.md §8)' },
      ],
      schemes: ['betaKey'],
      operations: PUBLIC_OPERATIONS,
    },
    { Provider, PublicChangelogEntry, AccountCall },
  );
}
