/**
 * The forwarding contract every proxy engine implements, and `createProxy`, which picks the
 * engine `gateway.engine` names: `http-proxy.ts` (http-proxy 1.18.1, the default) or `undici.ts`
 * (undici's dispatcher API; its connections in `undici-pool.ts`, its request body in
 * `undici-body.ts`). Only these files import their library; the rest of the gateway imports this
 * module. What a call is on every engine (its single result, its two clocks, the answers
 * forward() sends itself, the held last chunk) is `call.ts`'s `ForwardCall`; each engine's call
 * extends it with how that library reaches the upstream. A third engine is one more file and one more entry in `ENGINES` below (and in
 * `protocol/engines.ts`).
 *
 * One call, whichever engine carries it:
 * - `forward()` reports exactly once how it went (`ForwardResult`);
 * - two clocks: the caller's (`clientBodyTimeoutMs`, the longest pause between request-body
 *   chunks; past it 408 `svc_request_timeout` with `Connection: close`) and the provider's (the
 *   endpoint's timeout, latency and SLA, from the moment the last request byte was handed to the
 *   upstream request, and while the upstream holds the body back);
 * - an upstream timeout (504 `svc_upstream_timeout`) is told apart from a refused or reset
 *   connection, DNS failures included (502 `svc_upstream_unavailable`);
 * - a caller that leaves cancels the upstream request, also while it waits for a connection; a
 *   body streamed past `bodyLimitBytes` is cut with 413; an upstream that fails mid-body has the
 *   caller's response destroyed;
 * - headers cross only as `headers.ts` built them; redirects are passed back, never followed;
 * - the last chunk of an upstream body with a declared length is held until the head hook's
 *   body observer releases it, so a caller never holds a complete answer whose outcome record
 *   is not journaled yet.
 *
 * `test/gateway/proxy-*.ts` hold every engine to these rules (the harness runs each test once
 * per engine).
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { GATEWAY_ENGINES, type GatewayEngine } from '../../protocol/snapshot';
import type { CallerFailure, NetworkError } from '../request/classify';
import type { HeaderList } from '../request/headers';
import { createHttpProxyEngine } from './http-proxy';
import { createUndiciEngine } from './undici';

export { GATEWAY_ENGINES, type GatewayEngine };
export { DEFAULT_FREE_SOCKET_TIMEOUT_MS, DEFAULT_MAX_FREE_SOCKETS, DEFAULT_MAX_SOCKETS } from './defaults';
export { networkErrorOf } from './failures';

/**
 * Why a call did not complete normally: a provider's `NetworkError`, or a `CallerFailure`
 * (the caller left, streamed more than the limit, or stalled mid-body), never the provider's.
 */
export type ForwardFailure = NetworkError | CallerFailure;

/** Where and how to send one call. */
export interface ForwardTarget {
  /** The endpoint's upstream URL; only protocol, hostname and port are used. */
  origin: URL;
  /** Request path for the upstream (pathname + search), from `joinUpstreamPath` (request/route.ts). */
  path: string;
  /** Complete upstream request headers, from `upstreamRequestHeaders`. */
  headers: OutgoingHttpHeaders;
  /**
   * The provider's deadline for the response head, counted from the moment the last request
   * byte was handed upstream (and while the upstream holds the body back); then the longest
   * pause between chunks of the response body.
   */
  timeoutMs: number;
  /**
   * Most request-body bytes to stream upstream. Past it the upstream request is destroyed and
   * the caller gets 413 `svc_payload_too_large` (for bodies whose length was not declared).
   */
  bodyLimitBytes?: number;
}

/** Sees an upstream response body as it streams to the caller (`ResponseHead.body`). */
export interface BodyObserver {
  /** A chunk of the upstream body, as it is forwarded to the caller. Must not keep a reference it does not need. */
  chunk?(data: Buffer): void;
  /**
   * The upstream body ended. The caller's response (or the last chunk of a body with a
   * declared length) is held until `release` is called: `release(null)` ends it,
   * `release(err)` fails the call as a gateway fault. Not called when the body breaks off.
   */
  end(release: (err: Error | null) => void): void;
}

/** The response head about to be sent to the caller. */
export interface ResponseHead {
  status: number;
  /** Mutable: push the gateway's own headers (`x-svc-call-id`, …) here as name, value. */
  headers: HeaderList;
  /** False when forward() is sending its own problem+json for a failure. */
  fromUpstream: boolean;
  networkError: NetworkError | null;
  /** Set when forward() answers a failure of the caller's doing (408, 413). */
  callerFailure: CallerFailure | null;
  /**
   * The provider's clock at the head (0 when it answered before the request body was sent, and
   * on forward()'s 408/413, since the upstream never had the whole request).
   */
  upstreamLatencyMs: number;
  /** Set by the head hook (upstream answers only) to observe the body on its way to the caller. */
  body?: BodyObserver;
}

/** How one call ended. Delivered exactly once per forward(). */
export interface ForwardResult {
  /** Upstream status code; null when no response head arrived. */
  status: number | null;
  /** Status sent to the caller (upstream's, 502, 504 or 500); null when nothing was sent. */
  sentStatus: number | null;
  /** Set when the call failed; null when the whole response reached the caller. */
  networkError: ForwardFailure | null;
  /**
   * The provider's clock: milliseconds from the moment the last request byte was handed
   * upstream to the response head, or to a network failure (0 if either came first). For a
   * caller failure, what the provider had spent when the caller broke off (its clock at the
   * head if one came; 0 if it never had the whole request), never the caller's own time.
   */
  upstreamLatencyMs: number;
  /** A fault in the gateway itself (500 `svc_internal` was sent); never the provider's. */
  internalError?: unknown;
}

export type ForwardDone = (result: ForwardResult) => void;
export type ResponseHeadHook = (head: ResponseHead) => void;

export interface ProxyOptions {
  /** Upstream connections per origin. @default DEFAULT_MAX_SOCKETS */
  maxSockets?: number;
  /** @default DEFAULT_MAX_FREE_SOCKETS */
  maxFreeSockets?: number;
  /** @default DEFAULT_FREE_SOCKET_TIMEOUT_MS */
  freeSocketTimeoutMs?: number;
  /** @default DEFAULT_CLIENT_BODY_TIMEOUT_MS */
  clientBodyTimeoutMs?: number;
}

/** Sockets and calls the proxy currently holds (for /metrics and leak checks). */
export interface ProxyStats {
  /** forward() calls not reported yet. */
  inFlight: number;
  /** Upstream connections busy with a call. */
  sockets: number;
  /** Idle keep-alive connections. */
  freeSockets: number;
  /** Calls waiting for a connection. */
  queued: number;
}

export interface GatewayProxy {
  /** The engine carrying the calls. */
  readonly engine: GatewayEngine;
  /**
   * Forward `req` to `target` and stream the answer into `res`; the request is consumed.
   * `onHead` runs just before the head is written, for upstream answers and for forward()'s
   * own 502/504/408/413. `done` runs exactly once and must not throw.
   */
  forward(req: IncomingMessage, res: ServerResponse, target: ForwardTarget, done: ForwardDone, onHead?: ResponseHeadHook): void;
  stats(): ProxyStats;
  /** Destroy pooled connections. Calls in flight fail as resets. */
  close(): void;
}

const ENGINES: { readonly [E in GatewayEngine]: (options: ProxyOptions) => GatewayProxy } = {
  'http-proxy': createHttpProxyEngine,
  undici: createUndiciEngine,
};

/** Create the proxy on `engine` (default http-proxy). One per gateway process. */
export function createProxy(options: ProxyOptions & { engine?: GatewayEngine } = {}): GatewayProxy {
  const engine = options.engine ?? GATEWAY_ENGINES[0];
  const create = ENGINES[engine];
  if (create === undefined) throw new Error(`unknown proxy engine ${JSON.stringify(engine)}; one of ${GATEWAY_ENGINES.join(', ')}`);
  return create(options);
}
