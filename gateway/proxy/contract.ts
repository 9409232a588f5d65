/**
 * The forwarding contract every proxy engine implements (index.ts says what a call is on every
 * engine, and picks the engine). Its own module, so the engines and `call.ts` import their
 * interface from a file that imports none of them. The failure kinds an engine reports
 * (`NetworkError`, `CallerFailure`) are declared here, so the engines import nothing from
 * `../request/`: the request pipeline takes them, with the header filters of `headers.ts`,
 * through `index.ts`.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { GatewayEngine } from '../../protocol/snapshot';
import type { HeaderList } from './headers';

/** Transport failures that are the provider's fault. A caller that left is not one of them. */
export type NetworkError = 'refused' | 'reset' | 'timeout';

/**
 * Failures that are the caller's doing, never the provider's: it left before the answer
 * (`client_abort`), streamed a body over the limit (`body_too_large`), or stopped sending its
 * body for longer than `gateway.clientBodyTimeoutMs` (`client_timeout`).
 */
export type CallerFailure = 'client_abort' | 'body_too_large' | 'client_timeout';

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
