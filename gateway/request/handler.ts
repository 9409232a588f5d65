/**
 * The gateway's request pipeline (docs/design.md §3), in order: header count → ready → maintenance →
 * gate → route → endpoint → method → grant → body rules → rate limit → forward. The gate comes
 * before the route, so with the gate on a caller without a valid key gets 403 for every path
 * and cannot enumerate endpoints. Every refusal is
 * problem+json, counted in metrics and never recorded as a provider outcome. Every admitted
 * call gets a UUIDv7 call id and exactly one outcome record in the journal. An upstream
 * answer's record is taken when its body ends (a reset or timeout mid-body makes it a network
 * error; on endpoints with a response schema, a 2xx body gives its verdict) and gathered into
 * the journal's write for that event-loop turn; the caller's response ends only after that
 * write (the proxy holds the last chunk). A body that breaks off, or the caller leaving, records
 * at the end of the call; the gateway's own 502/504 record before their head is sent.
 * `X-Svc-Outcome` goes with the head, so on schema endpoints it shows the head-time verdict
 * (`ok`) while the record holds the final one.
 */
import { hash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerOf } from '../../protocol/bearer';
import { clientAddress } from '../../protocol/client-address';
import type { ErrorCode } from '../../protocol/errors';
import { sendProblem } from '../../protocol/http';
import { isWellFormedKey } from '../../protocol/keys';
import { COVERED_FAILURES, type Outcome, type OutcomeRecord } from '../../protocol/outcome';
import { TokenBuckets, type LimitPolicy } from '../../protocol/token-bucket';
import { classify, type CallFacts } from './classify';
import { upstreamRequestHeaders, type HeaderList } from './headers';
import type { Journal } from '../journal/journal';
import { rateLimitHeaders } from './limiter';
import type { GatewayMetrics } from '../metrics';
import type { GatewayProxy, ResponseHead } from '../proxy/index';
import { joinUpstreamPath, parseRoute } from './route';
import { BodyCheck, hasCheckableBody, verdictOf } from './schema-check';
import type { EndpointEntry, GatewayState, KeyEntry } from '../state/state';
import { isoTime } from './iso-time';
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
  now?: () => number;
}

/** Longest request target accepted. @default 8 KiB */
export const MAX_URL_LENGTH = 8 * 1024;
/**
 * The status recorded for a call whose caller left before any answer was sent (nginx's 499,
 * "client closed request"); nothing is sent with it.
 */
export const CLIENT_CLOSED_REQUEST = 499;
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

/**
 * `X-Svc-Premium` and `X-Svc-Refund`: what settlement will move for this call by its head-time
 * outcome, before any clamping (premium on `ok`; price + premium on covered failures; 0
 * otherwise and for keyless calls). `X-Svc-Settlement-Pending: 1` on priced endpoints.
 */
function settlementHeaders(headers: HeaderList, endpoint: EndpointEntry, keyed: boolean, outcome: Outcome): void {
  headers.push(
    'x-svc-premium',
    String(keyed && outcome === 'ok' ? endpoint.premium : 0),
    'x-svc-refund',
    String(keyed && COVERED_FAILURES.has(outcome) ? endpoint.price + endpoint.premium : 0),
  );
  if (endpoint.price > 0 || endpoint.premium > 0) headers.push('x-svc-settlement-pending', '1');
}

export function createHandler(opts: HandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const buckets = new TokenBuckets();
  const now = opts.now ?? Date.now;
  const limitShare = opts.limitShare ?? (() => 1);
  // The snapshot's limits objects change only with an update; convert each once.
  const policies = new WeakMap<object, LimitPolicy>();
  const policyOf = (p: { count: number; window_seconds: number; burst: number }): LimitPolicy => {
    let policy = policies.get(p);
    if (policy === undefined) policies.set(p, (policy = { count: p.count, windowSeconds: p.window_seconds, burst: p.burst }));
    return policy;
  };

  const refuse = (res: ServerResponse, req: IncomingMessage, code: ErrorCode, detail: string, headers: Record<string, string> = {}) => {
    opts.metrics.rejection(code);
    // Drain what the caller sent so the connection can be reused, unless it is too much.
    if (code === 'svc_payload_too_large' || code === 'svc_headers_too_large') res.setHeader('connection', 'close');
    else req.resume();
    sendProblem(res, code, detail, headers);
  };

  return (req, res) => {
    // Header fields are counted on the list that is forwarded (Node keeps every raw field;
    // the server's own field cap is off so that `req.headers` is built from the same list).
    if (req.rawHeaders.length > opts.maxHeaders * 2) {
      return refuse(res, req, 'svc_headers_too_large', `more than ${opts.maxHeaders} request header fields`);
    }
    const url = req.url ?? '/';
    if (url.length > MAX_URL_LENGTH) return refuse(res, req, 'svc_bad_request', `request target longer than ${MAX_URL_LENGTH} bytes`);

    const state = opts.state();
    if (state === null) {
      return refuse(res, req, 'svc_gateway_not_ready', 'the gateway has not loaded its configuration yet; retry shortly', {
        'retry-after': '1',
      });
    }
    if (state.flags.maintenance_mode) {
      const retry = String(opts.maintenanceRetryAfterS);
      return refuse(res, req, 'svc_maintenance', 'svc is in maintenance; see the status page', { 'retry-after': retry });
    }

    // Gate, before the path is looked at: with the gate on, a caller without a valid key learns
    // nothing about which endpoints exist. Keys are compared by SHA-256 only; the bearer value
    // is never stored or logged.
    const t = now();
    let key: KeyEntry | null = null;
    const bearer = bearerOf(req.headers.authorization);
    if (bearer !== null && isWellFormedKey(bearer)) {
      key = state.lookup(hash('sha256', bearer, 'hex'), t);
    }
    if (state.flags.beta_gate_enabled && key === null) {
      const why = bearer === null ? 'missing beta key' : 'this key is not a valid beta key (unknown, expired or revoked)';
      return refuse(res, req, 'svc_auth_not_in_beta', `${why}; send Authorization: Bearer svc_beta_…`);
    }

    const route = parseRoute(url);
    if (!route.ok) return refuse(res, req, route.code, route.detail);
    const endpoint = state.endpoints.get(route.endpointId);
    if (endpoint === undefined) return refuse(res, req, 'svc_unknown_endpoint', `no endpoint ${route.endpointId}`);
    const method = req.method ?? 'GET';
    if (!endpoint.methods.has(method)) {
      return refuse(res, req, 'svc_method_not_allowed', `${method} is not allowed on ${endpoint.id}`, { allow: endpoint.allow });
    }
    if (key !== null && key.endpoints !== null && !key.endpoints.has(endpoint.id)) {
      return refuse(res, req, 'svc_endpoint_not_granted', `this key is not granted endpoint ${endpoint.id}`);
    }

    // Body rules, before any upstream traffic.
    const declared = req.headers['content-length'];
    const chunked = req.headers['transfer-encoding'] !== undefined;
    if (BODYLESS.has(method) && (chunked || (declared !== undefined && declared !== '0'))) {
      return refuse(res, req, 'svc_bad_request', `${method} requests must not carry a body`);
    }
    if (declared !== undefined && Number(declared) > opts.bodyLimitBytes) {
      return refuse(res, req, 'svc_payload_too_large', `body exceeds ${opts.bodyLimitBytes} bytes`);
    }

    // Limits: per key, or per client address for keyless calls.
    const policyName = key ? 'key' : 'ip';
    const policy = key ? sharedPolicy(keyPolicy(key, policyOf(state.limits.key), t), limitShare()) : policyOf(state.limits.ip);
    const taken = buckets.take(key ? key.id : `ip:${clientAddress(req, opts.trustedProxyHops)}`, policy, t);
    const limitHeaders = rateLimitHeaders(policyName, policy, taken);
    if (!taken.allowed) {
      return refuse(
        res,
        req,
        'svc_rate_limited',
        `rate limit ${policy.count} per ${policy.windowSeconds}s reached; retry after ${taken.retryAfterSeconds}s`,
        limitHeaders,
      );
    }

    const path = joinUpstreamPath(endpoint.upstream, route.suffix, route.query);
    if (path === null) return refuse(res, req, 'svc_bad_request', 'the path would leave the endpoint');

    const callId = uuidv7(t);
    const startedAt = isoTime(t);
    let recorded: OutcomeRecord | null = null;
    const recordOf = (status: number, outcome: Outcome, latencyMs: number): OutcomeRecord => ({
      call_id: callId,
      key_id: key?.id ?? null,
      endpoint_id: endpoint.id,
      method,
      status,
      outcome,
      latency_ms: latencyMs,
      started_at: startedAt,
      gateway_id: opts.gatewayId,
    });
    // An upstream answer's record waits for the end of its body (a reset or timeout mid-body
    // makes it a network error; a schema endpoint's body gives its verdict), and is appended
    // exactly once: at body end (before the caller's response ends) or when the call is done.
    let pending: { record: OutcomeRecord; facts: CallFacts } | null = null;
    const onHead = (head: ResponseHead) => {
      const facts: CallFacts = {
        status: head.fromUpstream ? head.status : null,
        latencyMs: head.upstreamLatencyMs,
        slaMs: endpoint.slaMs,
        networkError: head.networkError,
        callerFailure: head.callerFailure,
      };
      const outcome = classify(facts);
      const latency = Math.round(head.upstreamLatencyMs);
      recorded = recordOf(head.status, outcome, latency);
      pending = null;
      const schema = endpoint.responseSchema;
      if (schema !== null && outcome === 'ok' && head.fromUpstream && hasCheckableBody(method, head.status)) {
        const check = new BodyCheck(schema, head.headers);
        const waiting = (pending = { record: recorded, facts });
        head.body = {
          chunk: check.chunk,
          end: (release) => {
            if (pending !== waiting) return release(null);
            pending = null;
            const result = check.finish();
            opts.metrics.schemaCheck(endpoint.id, result);
            recorded = { ...waiting.record, outcome: classify({ ...waiting.facts, schema: verdictOf(result) }) };
            opts.journal.appendThen(recorded, release);
          },
        };
      } else if (head.fromUpstream) {
        const waiting = (pending = { record: recorded, facts });
        head.body = {
          end: (release) => {
            if (pending !== waiting) return release(null);
            pending = null;
            opts.journal.appendThen(waiting.record, release);
          },
        };
      } else {
        opts.journal.append(recorded);
      }
      for (const name in limitHeaders) head.headers.push(name, limitHeaders[name]!);
      head.headers.push('x-svc-call-id', callId, 'x-svc-outcome', outcome, 'x-svc-latency-ms', String(latency));
      settlementHeaders(head.headers, endpoint, key !== null, outcome);
    };

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
      (result) => {
        const waiting = pending;
        if (waiting !== null) {
          // The body never ended: a reset or timeout mid-body is the provider's network error;
          // a caller that left (or a gateway fault) leaves the head-time verdict, unchecked.
          pending = null;
          const broken = result.networkError === 'reset' || result.networkError === 'timeout' ? result.networkError : null;
          recorded =
            broken === null ? waiting.record : { ...waiting.record, outcome: classify({ ...waiting.facts, networkError: broken }) };
          opts.journal.append(recorded);
        } else if (recorded === null && result.networkError === 'client_abort') {
          // The caller left before any answer: its own doing, recorded so that nothing moves.
          recorded = recordOf(CLIENT_CLOSED_REQUEST, 'caller_error', Math.round(result.upstreamLatencyMs));
          opts.journal.append(recorded);
        }
        const r = recorded;
        if (r !== null)
          opts.metrics.call(endpoint.id, r.outcome, r.status, result.status === null ? null : result.upstreamLatencyMs / 1000);
      },
      onHead,
    );
  };
}
