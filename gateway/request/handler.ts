/**
 * The gateway's request pipeline (docs/design.md §3), one named stage after another:
 *
 * 1. `admit`: header count → request target length → ready → maintenance → gate;
 * 2. `route`: route → endpoint → method → grant → body rules;
 * 3. `limit`: the key's (or client address's) bucket;
 * 4. `cover`: whether the pool covers the call (`state/coverage.ts`): a keyed call is covered
 *    while control says so and this gateway's part of the pool's free capital holds its price +
 *    premium; otherwise it is admitted uncovered (premium 0, refund 0, `X-Svc-Coverage: none`);
 *    `pay`: on a prepaid endpoint, a covered call's premium spent from this gateway's budget for
 *    the key's account (`state/budgets.ts`), or 402 `svc_payment_required`;
 * 5. `forward`: the upstream path and headers, handed to the proxy;
 * 6. record (`record.ts`'s `CallRecord`): the outcome record, from the answer's head to the end
 *    of the call.
 *
 * The gate comes before the route, so with the gate on a caller without a valid key gets 403 for
 * every path and cannot enumerate endpoints. Every refusal is problem+json, counted in metrics
 * and never recorded as a provider outcome; each comes before any upstream traffic. Every
 * admitted call gets a UUIDv7 call id and exactly one outcome record in the journal, appended
 * before the caller's response ends. `X-Svc-Outcome` goes with the head, so on schema endpoints
 * it shows the head-time verdict (`ok`) while the record holds the final one.
 *
 * Every stage is synchronous but one branch of `pay`: a call whose budget is short waits for
 * control's answer (bounded, `BUDGET_WAIT_MS`) and runs the rest of the pipeline when it comes.
 * The caller's body is not read meanwhile (the request stream stays paused, the socket applies
 * backpressure), so the proxy forwards it from its first byte as on any call. A call whose budget
 * covers it spends it in one synchronous step, with no allocation: the hot path stays as it was.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerOf } from '../../protocol/bearer';
import { clientAddress } from '../../runtime/client-address';
import type { ErrorCode } from '../../protocol/errors';
import { sendProblem } from '../../runtime/http';
import { TokenBuckets, type LimitPolicy } from '../../runtime/token-bucket';
import type { Journal } from '../journal/journal';
import { rateLimitHeaders } from './limiter';
import type { GatewayMetrics } from '../metrics';
import { upstreamRequestHeaders, type GatewayProxy } from '../proxy/index';
import { CallRecord } from './record';
import { digestOf } from './key-digest';
import { joinUpstreamPath, parseRoute } from './route';
import type { Budgets } from '../state/budgets';
import type { Coverage } from '../state/coverage';
import type { EndpointEntry, GatewayState, KeyEntry } from '../state/state';
import { uuidv7 } from './uuid';

export interface HandlerOptions {
  gatewayId: string;
  state: () => GatewayState | null;
  proxy: GatewayProxy;
  journal: Journal;
  metrics: GatewayMetrics;
  bodyLimitBytes: number;
  maintenanceRetryAfterS: number;
  /** Forwarding hops in front of the gateway whose `X-Forwarded-For` entry is trusted. */
  trustedProxyHops: number;
  /** Most request header fields a call may carry (431 `svc_headers_too_large` past it). */
  maxHeaders: number;
  /**
   * This gateway's share of every key's limit (0 < share ≤ 1, pushed by control): each key's
   * count and burst are multiplied by it. Keyless per-address limits stay whole. @default 1
   */
  limitShare?: () => number;
  /**
   * This instance's prepaid budgets (`state/budgets.ts`). Absent: it holds none, and every
   * keyed call with an account on a prepaid endpoint with a premium is refused with 402.
   */
  budgets?: Pick<Budgets, 'instance' | 'take' | 'want' | 'available'>;
  /** Whether the pool covers calls (`state/coverage.ts`). Absent: every keyed call is covered. */
  coverage?: Pick<Coverage, 'admit' | 'end'>;
  now?: () => number;
}

/** Longest request target accepted. @default 8 KiB */
export const MAX_URL_LENGTH = 8 * 1024;
/** Where a caller refused for payment can see and fund its account. */
const ACCOUNT_LINK = { link: '</api/v1/account>; rel="account"' };
/** Methods whose requests must not carry a body here. */
const BODYLESS = new Set(['GET', 'HEAD']);
/** A key's own limit or lift as a policy under given defaults; each pair is converted once. */
const scaled = new WeakMap<object, { defaults: LimitPolicy; policy: LimitPolicy }>();

/** Per-key policy: an active lift, else the key's own limit, else the default. */
function keyPolicy(key: KeyEntry, defaults: LimitPolicy, now: number): LimitPolicy {
  const chosen = key.lift !== null && key.lift.until > now ? key.lift : key.limit;
  if (chosen === null) return defaults;
  const known = scaled.get(chosen);
  if (known !== undefined && known.defaults === defaults) return known.policy;
  // Burst scales with the rate, in the same proportion as the default policy.
  const burst = Math.max(1, Math.round((chosen.count * defaults.burst) / defaults.count));
  const policy = { count: chosen.count, windowSeconds: chosen.windowSeconds, burst };
  scaled.set(chosen, { defaults, policy });
  return policy;
}

/** A policy times this gateway's share, each pair computed once (rounded to 6 decimals). */
const shared = new WeakMap<LimitPolicy, { share: number; policy: LimitPolicy }>();

function sharedPolicy(policy: LimitPolicy, share: number): LimitPolicy {
  if (share === 1) return policy;
  const known = shared.get(policy);
  if (known !== undefined && known.share === share) return known.policy;
  const times = (n: number) => Math.round(n * share * 1e6) / 1e6;
  const result = { count: times(policy.count), windowSeconds: policy.windowSeconds, burst: times(policy.burst), share };
  shared.set(policy, { share, policy: result });
  return result;
}

/** What a handler keeps for the life of the gateway: its options, the buckets and the converted limits. */
interface Pipeline {
  readonly opts: HandlerOptions;
  readonly buckets: TokenBuckets;
  readonly now: () => number;
  readonly limitShare: () => number;
  /** The snapshot's limits objects change only with an update; each is converted once. */
  readonly policies: WeakMap<object, LimitPolicy>;
}

/** What admission found: the configuration the call is judged against, its key, and when it came. */
interface Admitted {
  state: GatewayState;
  url: string;
  key: KeyEntry | null;
  t: number;
}

/** What routing found: the endpoint, the method, and the upstream path. */
interface Routed {
  endpoint: EndpointEntry;
  method: string;
  path: string;
}

/**
 * A call's coverage: the price + premium it holds of this gateway's allowance while it runs
 * (covered), or null when it is admitted uncovered (or keyless: nothing to cover). A number, so
 * that the stage allocates nothing per call.
 */
type Held = number | null;

/**
 * The request handler: each call runs the stages in order, admit → route → limit → pay →
 * forward → record, and stops at the first that refuses it (that stage has sent the refusal).
 */
export function createHandler(opts: HandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const pipeline: Pipeline = {
    opts,
    buckets: new TokenBuckets(),
    now: opts.now ?? Date.now,
    limitShare: opts.limitShare ?? (() => 1),
    policies: new WeakMap(),
  };
  return (req, res) => {
    const admitted = admit(pipeline, req, res);
    if (admitted === null) return;
    const routed = route(pipeline, req, res, admitted);
    if (routed === null) return;
    const limitHeaders = limit(pipeline, req, res, admitted);
    if (limitHeaders === null) return;
    const held = covered(pipeline, admitted, routed);
    // An uncovered call pays nothing: it is forwarded without touching the budget.
    if (held === null) return forward(pipeline, req, res, admitted, routed, limitHeaders, 0, null);
    const reserved = pay(pipeline, req, res, admitted, routed, limitHeaders);
    if (reserved === null) {
      // Refused (402), or waiting for budget: it gives its part back, and takes it again after the wait.
      pipeline.opts.coverage?.end(held, false);
      return;
    }
    forward(pipeline, req, res, admitted, routed, limitHeaders, reserved, held);
  };
}

/** Refuse a call with problem+json: counted in metrics, never recorded as a provider outcome. */
function refuse(
  p: Pipeline,
  req: IncomingMessage,
  res: ServerResponse,
  code: ErrorCode,
  detail: string,
  headers: Record<string, string> = {},
  extra?: Record<string, unknown>,
): null {
  p.opts.metrics.rejection(code);
  // Drain what the caller sent so the connection can be reused, unless it is too much.
  if (code === 'svc_payload_too_large' || code === 'svc_headers_too_large') res.setHeader('connection', 'close');
  else req.resume();
  sendProblem(res, code, detail, headers, extra);
  return null;
}

/**
 * Admit: header count, request target length, ready, maintenance, and the gate, before the path
 * is looked at (with the gate on, a caller without a valid key learns nothing about which
 * endpoints exist). Keys are compared by SHA-256 only; the bearer value is never stored or logged.
 */
function admit(p: Pipeline, req: IncomingMessage, res: ServerResponse): Admitted | null {
  const { opts } = p;
  // Header fields are counted on the list that is forwarded (Node keeps every raw field;
  // the server's own field cap is off so that `req.headers` is built from the same list).
  if (req.rawHeaders.length > opts.maxHeaders * 2) {
    return refuse(p, req, res, 'svc_headers_too_large', `more than ${opts.maxHeaders} request header fields`);
  }
  const url = req.url ?? '/';
  if (url.length > MAX_URL_LENGTH) return refuse(p, req, res, 'svc_bad_request', `request target longer than ${MAX_URL_LENGTH} bytes`);

  const state = opts.state();
  if (state === null) {
    return refuse(p, req, res, 'svc_gateway_not_ready', 'the gateway has not loaded its configuration yet; retry shortly', {
      'retry-after': '1',
    });
  }
  if (state.flags.maintenance_mode) {
    const retry = String(opts.maintenanceRetryAfterS);
    return refuse(p, req, res, 'svc_maintenance', 'svc is in maintenance; see the status page', { 'retry-after': retry });
  }

  const t = p.now();
  let key: KeyEntry | null = null;
  const bearer = bearerOf(req.headers.authorization);
  if (bearer !== null) {
    const digest = digestOf(req.socket, bearer);
    if (digest !== null) key = state.lookup(digest, t);
  }
  if (state.flags.beta_gate_enabled && key === null) {
    const why = bearer === null ? 'missing beta key' : 'this key is not a valid beta key (unknown, expired or revoked)';
    return refuse(p, req, res, 'svc_auth_not_in_beta', `${why}; send Authorization: Bearer svc_beta_…`);
  }
  return { state, url, key, t };
}

/**
 * Route: the endpoint, its methods, the key's grant, the body rules, and the upstream path
 * (refused if it would leave the endpoint's base), before any upstream traffic.
 */
function route(p: Pipeline, req: IncomingMessage, res: ServerResponse, { state, url, key }: Admitted): Routed | null {
  const parsed = parseRoute(url);
  if (!parsed.ok) return refuse(p, req, res, parsed.code, parsed.detail);
  const endpoint = state.endpoints.get(parsed.endpointId);
  if (endpoint === undefined) return refuse(p, req, res, 'svc_unknown_endpoint', `no endpoint ${parsed.endpointId}`);
  const method = req.method ?? 'GET';
  if (!endpoint.methods.has(method)) {
    return refuse(p, req, res, 'svc_method_not_allowed', `${method} is not allowed on ${endpoint.id}`, { allow: endpoint.allow });
  }
  if (key !== null && key.endpoints !== null && !key.endpoints.has(endpoint.id)) {
    return refuse(p, req, res, 'svc_endpoint_not_granted', `this key is not granted endpoint ${endpoint.id}`);
  }

  const declared = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (BODYLESS.has(method) && (chunked || (declared !== undefined && declared !== '0'))) {
    return refuse(p, req, res, 'svc_bad_request', `${method} requests must not carry a body`);
  }
  if (declared !== undefined && Number(declared) > p.opts.bodyLimitBytes) {
    return refuse(p, req, res, 'svc_payload_too_large', `body exceeds ${p.opts.bodyLimitBytes} bytes`);
  }
  // Known before any budget is spent: nothing is paid for a call refused after pay.
  const path = joinUpstreamPath(endpoint.upstream, parsed.suffix, parsed.query);
  if (path === null) return refuse(p, req, res, 'svc_bad_request', 'the path would leave the endpoint');
  return { endpoint, method, path };
}

/** The snapshot's `{ count, window_seconds, burst }` as a policy, converted once per object. */
function policyOf(p: Pipeline, limits: { count: number; window_seconds: number; burst: number }): LimitPolicy {
  let policy = p.policies.get(limits);
  if (policy === undefined) {
    policy = { count: limits.count, windowSeconds: limits.window_seconds, burst: limits.burst };
    p.policies.set(limits, policy);
  }
  return policy;
}

/**
 * Limit: one token from the key's bucket (its lift, own limit or the default, times this
 * gateway's share), or from the client address's for keyless calls. The rate-limit headers for
 * the answer, or null when refused.
 */
function limit(p: Pipeline, req: IncomingMessage, res: ServerResponse, { state, key, t }: Admitted): Record<string, string> | null {
  const policyName = key ? 'key' : 'ip';
  const policy = key ? sharedPolicy(keyPolicy(key, policyOf(p, state.limits.key), t), p.limitShare()) : policyOf(p, state.limits.ip);
  const taken = p.buckets.take(key ? key.id : `ip:${clientAddress(req, p.opts.trustedProxyHops)}`, policy, t);
  const limitHeaders = rateLimitHeaders(policyName, policy, taken);
  if (!taken.allowed) {
    const detail = `rate limit ${policy.count} per ${policy.windowSeconds}s reached; retry after ${taken.retryAfterSeconds}s`;
    return refuse(p, req, res, 'svc_rate_limited', detail, limitHeaders);
  }
  return limitHeaders;
}

/** Cover: a keyed call holds its price + premium of this gateway's allowance, or goes uncovered. */
function covered(p: Pipeline, { key }: Admitted, { endpoint }: Routed): Held {
  if (key === null) return null;
  const held = endpoint.price + endpoint.premium;
  if (p.opts.coverage === undefined || p.opts.coverage.admit(held)) return held;
  p.opts.metrics.uncovered(endpoint.id);
  return null;
}

/**
 * Pay: on a prepaid endpoint with a premium, a keyed call whose key has an account spends the
 * premium from this instance's budget for the account. Returns the premium reserved (0 when the
 * endpoint, the key or the premium leaves nothing to pay), or null when the call was refused or
 * waits for budget: then `afterWait` finishes it.
 */
function pay(
  p: Pipeline,
  req: IncomingMessage,
  res: ServerResponse,
  admitted: Admitted,
  routed: Routed,
  limitHeaders: Record<string, string>,
): number | null {
  const { key } = admitted;
  const { endpoint } = routed;
  if (!endpoint.prepaid || key === null || key.account === null || endpoint.premium <= 0) return 0;
  const { budgets } = p.opts;
  const account = key.account;
  const premium = endpoint.premium;
  if (budgets === undefined) return paymentRequired(p, req, res, account, premium);
  if (budgets.take(account, premium)) return premium;
  const asked = budgets.want(account, premium);
  if (asked === null) return paymentRequired(p, req, res, account, premium);
  void asked.then(
    () => afterWait(p, req, res, admitted, routed, limitHeaders, account),
    () => afterWait(p, req, res, admitted, routed, limitHeaders, account),
  );
  return null;
}

/**
 * The budget wait is over (control answered, failed, or the wait ran out): look again, and
 * forward or refuse. A caller that left meanwhile is dropped: nothing was spent or recorded.
 */
function afterWait(
  p: Pipeline,
  req: IncomingMessage,
  res: ServerResponse,
  admitted: Admitted,
  routed: Routed,
  limitHeaders: Record<string, string>,
  account: string,
): void {
  if (res.destroyed || res.closed || req.socket.destroyed) return;
  const premium = routed.endpoint.premium;
  try {
    // Covered again (coverage may have paused meanwhile: then it goes uncovered, and pays nothing).
    const held = covered(p, admitted, routed);
    if (held === null) forward(p, req, res, admitted, routed, limitHeaders, 0, null);
    else if (p.opts.budgets!.take(account, premium)) forward(p, req, res, admitted, routed, limitHeaders, premium, held);
    else {
      p.opts.coverage?.end(held, false);
      paymentRequired(p, req, res, account, premium);
    }
  } catch (err) {
    // Off the server's own call stack: a fault here must not become an unhandled rejection.
    res.destroy(err as Error);
  }
}

/** 402 `svc_payment_required`: what the call needs, what this gateway holds for the account, and where to fund it. */
function paymentRequired(p: Pipeline, req: IncomingMessage, res: ServerResponse, account: string, premium: number): null {
  const available = Math.max(0, p.opts.budgets?.available(account) ?? 0);
  const detail = `account ${account}: this gateway holds ${available} of its money, this call needs ${premium}; deposit, then retry`;
  return refuse(p, req, res, 'svc_payment_required', detail, ACCOUNT_LINK, { required: premium, available, account_id: account });
}

/**
 * Forward: the headers that may cross, and the call handed to the proxy with its record
 * (`record.ts`, carrying the premium reserved, if any) observing the answer.
 */
function forward(
  p: Pipeline,
  req: IncomingMessage,
  res: ServerResponse,
  { key, t }: Admitted,
  { endpoint, method, path }: Routed,
  limitHeaders: Record<string, string>,
  reserved: number,
  held: Held,
): void {
  const { opts } = p;
  const instance = reserved > 0 ? opts.budgets!.instance : null;
  const call = new CallRecord(opts, uuidv7(t), t, key, endpoint, method, limitHeaders, reserved, instance, held);
  const headers = upstreamRequestHeaders(req.rawHeaders, {
    clientAddress: req.socket.remoteAddress ?? '',
    proto: 'http',
    host: endpoint.upstream.host,
    inject: endpoint.headers,
  });
  opts.proxy.forward(
    req,
    res,
    { origin: endpoint.upstream, path, headers, timeoutMs: endpoint.timeoutMs, bodyLimitBytes: opts.bodyLimitBytes },
    (result) => call.end(result),
    (head) => call.head(head),
  );
}
