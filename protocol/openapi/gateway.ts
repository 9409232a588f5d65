/**
 * The gateway ({market_url}, docs/design.md §3): calls through `/v1/{endpoint}/{path}` and
 * `/{endpoint}/{path}`, `/health` and `/metrics`. Written to `docs/openapi/gateway.json`.
 */
import { z } from 'zod';
import { ENDPOINT_ID_PATTERN } from '../endpoint';
import { ERRORS, type ErrorCode } from '../errors';
import { GatewayHealthDetail, PublicHealth } from '../gateway';
import { buildDocument } from './build';
import type { Answer, HeaderName, JsonObject, Method, Operation } from './operation';
import { EDGE_ERRORS, pathParam } from './common';

/** Methods an endpoint may list (POST always; the others only when listed, else 405). */
const CALL_METHODS: readonly Method[] = ['post', 'get', 'put', 'patch', 'delete', 'head', 'options'];

const CALL_HEADERS: readonly HeaderName[] = [
  'X-Svc-Call-Id',
  'X-Svc-Outcome',
  'X-Svc-Latency-Ms',
  'X-Svc-Coverage',
  'X-Svc-Premium',
  'X-Svc-Refund',
];

/** In the order the gateway checks them (docs/gateway.md). */
const CALL_ERRORS: readonly ErrorCode[] = [
  ...EDGE_ERRORS,
  'svc_gateway_not_ready',
  'svc_maintenance',
  'svc_auth_not_in_beta',
  'svc_unknown_endpoint',
  'svc_method_not_allowed',
  'svc_endpoint_not_granted',
  'svc_payload_too_large',
  'svc_rate_limited',
  'svc_payment_required',
  'svc_upstream_timeout',
  'svc_upstream_unavailable',
];

const ENDPOINT = pathParam('endpoint', 'the endpoint id', z.string().regex(ENDPOINT_ID_PATTERN));
const UPSTREAM_PATH = pathParam(
  'path',
  "the path under the endpoint's upstream base URL, passed on as it is (it may hold `/`); with the query string. Anything that could leave the base (`..`, encoded slashes, absolute URLs) is 400",
);

/** `/health` answers one of the two shapes: the bare one without credentials, the detail with the metrics token. */
const GatewayHealth = z.union([PublicHealth, GatewayHealthDetail]);

/** An upstream answer with one of the statuses the gateway also uses passes through all the same. */
const PASSED_THROUGH: readonly Answer[] = [...new Set(CALL_ERRORS.map((c) => ERRORS[c].status))].map((status) => ({
  status,
  description: `The upstream's own ${status} answer, passed through with the gateway's headers`,
  content: { type: '*/*' },
  headers: [...CALL_HEADERS, 'RateLimit', 'RateLimit-Policy', 'X-Svc-Settlement-Pending'],
  shared: `upstream-${status}`,
}));

const CALL_ANSWERS: readonly Answer[] = [
  ...PASSED_THROUGH,
  {
    status: 'default',
    description:
      "The upstream's answer, passed through (its `Set-Cookie`, `Server`, `X-Powered-By`, `RateLimit*` and hop-by-hop headers removed), with the gateway's `X-Svc-*` headers and the caller's limit. An answer with one of the gateway's own error statuses is the gateway's when it is `application/problem+json`, else the upstream's.",
    content: { type: '*/*' },
    headers: ['RateLimit', 'RateLimit-Policy', 'X-Svc-Settlement-Pending'],
    requiredHeaders: CALL_HEADERS,
  },
];

function call(method: Method, versioned: boolean): Operation {
  const verb = method.toUpperCase();
  return {
    method,
    path: versioned ? '/v1/{endpoint}/{path}' : '/{endpoint}/{path}',
    operationId: `call${verb[0]}${verb.slice(1).toLowerCase()}${versioned ? 'V1' : ''}`,
    summary: `${verb} through the gateway to the endpoint's upstream${versioned ? '' : ' (the same route without /v1)'}`,
    description:
      method === 'post'
        ? 'POST is always allowed. Each admitted call is recorded as one outcome (docs/design.md §6) and settled later: refunds for covered failures, a premium on `ok`.'
        : `${verb} only when the endpoint lists it (else 405 \`svc_method_not_allowed\` with \`Allow\`)${method === 'get' || method === 'head' ? '; a body is refused (400)' : ''}.`,
    tag: 'calls',
    security: ['betaKey', 'none'],
    params: [ENDPOINT, UPSTREAM_PATH],
    ...(method === 'get' || method === 'head'
      ? {}
      : {
          body: {
            schema: z.unknown(),
            contentTypes: ['*/*'],
            required: false,
            description: 'Forwarded as it is, up to `gateway.bodyLimitBytes`',
          },
        }),
    answers: CALL_ANSWERS,
    errors: CALL_ERRORS,
    errorHeaders: {
      svc_maintenance: ['Retry-After'],
      svc_gateway_not_ready: ['Retry-After'],
      svc_request_timeout: ['X-Svc-Call-Id', 'X-Svc-Outcome'],
      svc_payload_too_large: ['X-Svc-Call-Id', 'X-Svc-Outcome'],
    },
  };
}

export const GATEWAY_OPERATIONS: readonly Operation[] = [
  ...CALL_METHODS.map((m) => call(m, true)),
  ...CALL_METHODS.map((m) => call(m, false)),
  {
    method: 'get',
    path: '/health',
    operationId: 'getGatewayHealth',
    summary: 'Whether the gateway serves calls',
    description:
      'Without credentials, one word of readiness for probes; with the metrics token, the snapshot, the control link and the journal backlog.',
    tag: 'operator',
    security: ['none', 'metricsToken'],
    answers: [
      { status: 200, description: 'Serving calls (`GatewayHealthDetail` with the metrics token)', json: { GatewayHealth } },
      { status: 503, description: 'Not serving: no state loaded yet, or maintenance', json: { GatewayHealth } },
    ],
    errors: [...EDGE_ERRORS, 'svc_unauthorized'],
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'getGatewayMetrics',
    summary: 'Prometheus metrics of the gateway',
    tag: 'operator',
    security: ['metricsToken'],
    answers: [
      {
        status: 200,
        description: 'Prometheus text exposition format 0.0.4',
        content: { type: 'text/plain; version=0.0.4; charset=utf-8' },
      },
    ],
    errors: [...EDGE_ERRORS, 'svc_unauthorized'],
  },
];

/** The gateway's OpenAPI document. */
export function gatewayDocument(): JsonObject {
  return buildDocument({
    title: 'svc gateway',
    description:
      "The data plane ({market_url}): agents call wrapped upstream APIs through `/v1/{endpoint}/{path}` (or `/{endpoint}/{path}`). While `beta_gate_enabled` is on, every call needs `Authorization: Bearer svc_beta_…` (403 `svc_auth_not_in_beta` for every path otherwise). Each key is limited by a token bucket (429 `svc_rate_limited` with `Retry-After`, `RateLimit`, `RateLimit-Policy`, IETF draft 11). On a prepaid endpoint a keyed call is admitted only while the key's account covers the premium (402 `svc_payment_required` with `required`, `available` and `account_id` otherwise). The caller's `Authorization`, `Cookie`, `Proxy-*` and hop-by-hop headers never reach the upstream. Every error is problem+json with a catalogue `code`.",
    server: { description: '{market_url} (default http://127.0.0.1:7070)' },
    tags: [
      { name: 'calls', description: 'Calls to wrapped upstreams' },
      { name: 'operator', description: 'Health and metrics' },
    ],
    schemes: ['betaKey', 'metricsToken'],
    operations: GATEWAY_OPERATIONS,
  });
}
