/**
 * The gateway's one wrapper around http-proxy 1.18.1; no other file imports http-proxy.
 *
 * `forward()` sends one admitted call upstream and reports exactly once how it went. It owns:
 * - keep-alive agents with bounded sockets, and `proxyTimeout` on every call;
 * - a per-call deadline so an upstream timeout (504) is told apart from a reset (502);
 * - client aborts: the upstream request is destroyed, also while it waits in the agent queue
 *   (node-http-proxy #1586: 1.18.1 only listens for `aborted`, which Node no longer emits
 *   once the request body has been read);
 * - upstream failures mid-body: the caller's response is destroyed instead of hanging;
 * - the `deleteLength` pass is removed (node-http-proxy #1721: it turned
 *   `DELETE`/`OPTIONS` + chunked bodies into a smuggled request);
 * - response headers are rebuilt from the upstream's raw headers (selfHandleResponse), never
 *   copied; redirects are never followed; forwarding headers come from `headers.ts` only.
 *
 * A network failure before the response head is answered here with problem+json
 * (502 `svc_upstream_unavailable`, 504 `svc_upstream_timeout`); the caller only records it.
 */
import http, { type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import httpProxy from 'http-proxy';
import { sendProblem } from '../protocol/http';
import type { NetworkError } from './classify';
import { clientResponseHeaders, headerListObject, type HeaderList } from './headers';

/** Upstream sockets per agent (http and https each). @default 256 */
export const DEFAULT_MAX_SOCKETS = 256;
/** Idle keep-alive sockets kept per agent. @default 64 */
export const DEFAULT_MAX_FREE_SOCKETS = 64;
/** Idle keep-alive sockets are closed after this, below common upstream keep-alive timeouts. @default 4000 */
export const DEFAULT_FREE_SOCKET_TIMEOUT_MS = 4_000;

/**
 * Why a call did not complete normally. `client_abort` (the caller left) and `body_too_large`
 * (the caller streamed more than the limit) are the caller's doing, never the provider's.
 */
export type ForwardFailure = NetworkError | 'client_abort' | 'body_too_large';

/** Where and how to send one call. */
export interface ForwardTarget {
  /** The endpoint's upstream URL; only protocol, hostname and port are used. */
  origin: URL;
  /** Request path for the upstream (pathname + search), from `buildUpstreamPath`. */
  path: string;
  /** Complete upstream request headers, from `upstreamRequestHeaders`. */
  headers: OutgoingHttpHeaders;
  /** Deadline for the response head, and the idle timeout of the upstream socket after it. */
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
  /** Milliseconds from forward() to the upstream response head, or to the failure. */
  upstreamLatencyMs: number;
  /** A fault in the gateway itself (500 `svc_internal` was sent); never the provider's. */
  internalError?: unknown;
}

export type ForwardDone = (result: ForwardResult) => void;
export type ResponseHeadHook = (head: ResponseHead) => void;

export interface ProxyOptions {
  /** @default DEFAULT_MAX_SOCKETS */
  maxSockets?: number;
  /** @default DEFAULT_MAX_FREE_SOCKETS */
  maxFreeSockets?: number;
  /** @default DEFAULT_FREE_SOCKET_TIMEOUT_MS */
  freeSocketTimeoutMs?: number;
}

/** Sockets and calls the proxy currently holds (for /metrics and leak checks). */
export interface ProxyStats {
  inFlight: number;
  sockets: number;
  freeSockets: number;
  queued: number;
}

export interface GatewayProxy {
  /**
   * Forward `req` to `target` and stream the answer into `res`. Sets `req.url` and
   * `req.headers` to the target's (the request is consumed). `onHead` runs just before the
   * head is written, for upstream answers and for forward()'s own 502/504. `done` runs exactly
   * once and must not throw.
   */
  forward(req: IncomingMessage, res: ServerResponse, target: ForwardTarget, done: ForwardDone, onHead?: ResponseHeadHook): void;
  stats(): ProxyStats;
  /** Destroy pooled sockets. Calls in flight fail as resets. */
  close(): void;
}

const CONNECT_FAILURES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ETIMEDOUT',
  'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Map an upstream socket error to refused (never connected) or reset (anything after). */
export function networkErrorOf(err: unknown): 'refused' | 'reset' {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code !== undefined && CONNECT_FAILURES.has(code) ? 'refused' : 'reset';
}

const ignore = (): void => {};

type Pass = ((...args: unknown[]) => unknown) & { name: string };

/** A response's declared body length, or -1 when it has none (or an unusable one). */
function declaredLength(value: string | undefined): number {
  if (value === undefined) return -1;
  const n = Number(value);
  return Number.isSafeInteger(n) && n >= 0 ? n : -1;
}

function count(table: NodeJS.ReadOnlyDict<unknown[]>): number {
  let n = 0;
  for (const key in table) n += table[key]?.length ?? 0;
  return n;
}

/** Create the proxy. One per gateway process. */
export function createProxy(options: ProxyOptions = {}): GatewayProxy {
  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSockets ?? DEFAULT_MAX_SOCKETS,
    maxFreeSockets: options.maxFreeSockets ?? DEFAULT_MAX_FREE_SOCKETS,
    timeout: options.freeSocketTimeoutMs ?? DEFAULT_FREE_SOCKET_TIMEOUT_MS,
    scheduling: 'lifo' as const,
  };
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent(agentOptions);
  // The server only carries http-proxy's events; its options are unused (see `stream` below).
  const server = httpProxy.createProxyServer({ xfwd: false, ws: false });
  // Errors reach each call's own listeners; without this, EventEmitter3 would throw.
  server.on('error', ignore);
  server.on('econnreset', ignore);

  // Of http-proxy's web passes, only `stream` acts on the options below: `timeout` and
  // `XHeaders` are off, and `deleteLength` is the smuggling defect (node-http-proxy #1721). So
  // each call runs the `stream` pass alone with one options object, instead of `server.web()`,
  // which copies the server's options and the call's into a new object twice per call.
  const stream = (server as unknown as { webPasses: Pass[] }).webPasses.find((pass) => pass.name === 'stream');
  if (stream === undefined) throw new Error('http-proxy web passes changed: no stream pass');
  const streamPass: Pass = stream;

  const targets = new WeakMap<URL, object>();
  function targetOf(origin: URL): object {
    let target = targets.get(origin);
    if (target === undefined) {
      const hostname = origin.hostname.startsWith('[') ? origin.hostname.slice(1, -1) : origin.hostname;
      target = { protocol: origin.protocol, hostname, host: hostname, port: origin.port || (origin.protocol === 'https:' ? '443' : '80') };
      targets.set(origin, target);
    }
    return target;
  }

  let inFlight = 0;

  function forward(req: IncomingMessage, res: ServerResponse, target: ForwardTarget, done: ForwardDone, onHead?: ResponseHeadHook): void {
    const started = performance.now();
    let finished = false;
    let timedOut = false;
    let upstreamReq: ClientRequest | null = null;
    let upstreamRes: IncomingMessage | null = null;
    let status: number | null = null;
    let latency = -1;
    inFlight++;

    const elapsed = (): number => (latency >= 0 ? latency : Math.round(performance.now() - started));
    // Every path first claims the call's single result, then cleans up, then reports: cleanup
    // (destroying the upstream) fires events whose handlers then see the call as settled.
    const claim = (): boolean => {
      if (finished) return false;
      finished = true;
      inFlight--;
      clearTimeout(deadline);
      return true;
    };
    const report = (networkError: ForwardFailure | null, sentStatus: number | null, internalError?: unknown): void => {
      const result: ForwardResult = { status, sentStatus, networkError, upstreamLatencyMs: elapsed() };
      if (internalError !== undefined) result.internalError = internalError;
      done(result);
    };
    const abortUpstream = (): void => {
      upstreamRes?.destroy();
      upstreamReq?.destroy();
    };
    // A fault of the gateway itself (a throwing hook, a request Node will not send): 500.
    const respondInternal = (err: unknown): void => {
      const sent = res.headersSent ? null : 500;
      if (sent !== null) sendProblem(res, 'svc_internal', 'the request could not be forwarded');
      else res.destroy();
      report(null, sent, err);
    };
    const internal = (err: unknown): void => {
      if (!claim()) return;
      abortUpstream();
      respondInternal(err);
    };
    // Answer a failure before any head was sent; after it, cut the caller's connection.
    const fail = (kind: NetworkError): void => {
      if (!claim()) return;
      abortUpstream();
      if (res.headersSent || res.destroyed) {
        res.destroy();
        report(kind, status);
        return;
      }
      const sent = kind === 'timeout' ? 504 : 502;
      if (latency < 0) latency = Math.round(performance.now() - started);
      const headers: HeaderList = [];
      try {
        onHead?.({ status: sent, headers, fromUpstream: false, networkError: kind, upstreamLatencyMs: latency });
      } catch (err) {
        respondInternal(err);
        return;
      }
      const extra = headerListObject(headers) as Record<string, string>;
      if (kind === 'timeout') {
        sendProblem(res, 'svc_upstream_timeout', `upstream did not answer within ${target.timeoutMs} ms`, extra);
      } else {
        sendProblem(res, 'svc_upstream_unavailable', kind === 'refused' ? 'upstream refused the connection' : 'upstream reset the connection', extra);
      }
      report(kind, sent);
    };

    const deadline = setTimeout(() => {
      timedOut = true;
      fail('timeout');
    }, target.timeoutMs);

    res.on('finish', () => {
      if (upstreamRes !== null && claim()) report(null, status);
    });
    // The caller left: nobody is waiting for this call any more.
    const callerLeft = (): void => {
      if (res.writableFinished || !claim()) return;
      abortUpstream();
      res.destroy();
      report('client_abort', res.headersSent ? status : null);
    };
    const callerGone = (): boolean => req.socket.destroyed && !res.writableFinished;
    res.on('close', callerLeft);
    req.on('error', callerLeft);

    const onResponse = (incoming: IncomingMessage): void => {
      if (finished) {
        incoming.destroy();
        return;
      }
      clearTimeout(deadline);
      upstreamRes = incoming;
      status = incoming.statusCode ?? 502;
      latency = Math.round(performance.now() - started);
      const onBroken = (): void => {
        if (finished) return;
        if (callerGone()) return callerLeft();
        if (!claim()) return;
        upstreamReq?.destroy();
        res.destroy();
        report(timedOut ? 'timeout' : 'reset', status);
      };
      incoming.on('aborted', onBroken);
      incoming.on('error', onBroken);
      const headers = clientResponseHeaders(incoming.rawHeaders);
      const head: ResponseHead = { status, headers, fromUpstream: true, networkError: null, upstreamLatencyMs: latency };
      try {
        onHead?.(head);
      } catch (err) {
        internal(err);
        return;
      }
      try {
        res.writeHead(status, headers);
      } catch (err) {
        // A head Node refuses to write (e.g. an invalid status) is the upstream's fault.
        upstreamRes = null;
        status = null;
        fail(networkErrorOf(err));
        return;
      }
      forwardBody(incoming, res, head.body);
    };

    // The answer's bytes go to the caller as they arrive, except the last chunk of a body with a
    // declared length: it is written together with the end, once the body observer released
    // it. So a caller never holds a complete response before its outcome record is journaled.
    const forwardBody = (incoming: IncomingMessage, out: ServerResponse, observer: BodyObserver | undefined): void => {
      let remaining = declaredLength(incoming.headers['content-length']);
      let held: Buffer | undefined;
      const observe = observer?.chunk;
      incoming.on('data', (chunk: Buffer) => {
        if (observe !== undefined) observe(chunk);
        if (remaining >= 0 && (remaining -= chunk.length) <= 0) {
          if (held === undefined) {
            held = chunk;
            return;
          }
          out.write(held); // not reached with a conforming parser: the length ended at `held`
          held = undefined;
        }
        if (!out.write(chunk)) {
          incoming.pause();
          out.once('drain', () => incoming.resume());
        }
      });
      incoming.on('end', () => {
        if (finished) return;
        if (observer === undefined) return void out.end(held);
        try {
          observer.end((err) => {
            if (finished) return;
            if (err === null) out.end(held);
            else internal(err);
          });
        } catch (err) {
          internal(err);
        }
      });
    };

    // http-proxy creates the upstream request inside web() and hands out no reference until it
    // has a socket. It does pipe the body from `options.buffer`, so that is where we take it.
    const limit = target.bodyLimitBytes;
    const tooLarge = (): void => {
      if (!claim()) return;
      req.pause();
      abortUpstream();
      if (res.headersSent) res.destroy();
      else sendProblem(res, 'svc_payload_too_large', `body exceeds ${limit} bytes`, { connection: 'close' });
      report('body_too_large', res.headersSent ? 413 : null);
    };
    // The caller's body, streamed with backpressure and counted against the limit.
    const body = {
      pipe(dest: ClientRequest): ClientRequest {
        upstreamReq = dest;
        let seen = 0;
        req.on('data', (chunk: Buffer) => {
          if (limit !== undefined && (seen += chunk.length) > limit) return tooLarge();
          if (!dest.write(chunk)) {
            req.pause();
            dest.once('drain', () => req.resume());
          }
        });
        req.on('end', () => dest.end());
        dest.on('response', onResponse);
        dest.on('timeout', () => {
          timedOut = true; // proxyTimeout fired; http-proxy aborts the request next
        });
        dest.on('error', (err) => {
          if (finished) return;
          if (callerGone()) return callerLeft();
          fail(timedOut ? 'timeout' : networkErrorOf(err));
        });
        return dest;
      },
    };

    req.url = target.path;
    req.headers = target.headers as IncomingMessage['headers'];
    const isHttps = target.origin.protocol === 'https:';
    try {
      streamPass(req, res, {
        selfHandleResponse: true,
        toProxy: true, // use req.url verbatim: no url.parse() of the caller's path
        prependPath: false,
        ignorePath: false,
        changeOrigin: false, // Host comes from headers.ts
        followRedirects: false,
        secure: true,
        target: targetOf(target.origin),
        agent: isHttps ? httpsAgent : httpAgent,
        proxyTimeout: target.timeoutMs,
        buffer: body,
      }, undefined, server, ignore);
    } catch (err) {
      // http.request() throws synchronously for headers or paths Node will not send.
      internal(err);
      return;
    }
    if (upstreamReq === null) internal(new Error('http-proxy did not create an upstream request'));
  }

  return {
    forward,
    stats(): ProxyStats {
      return {
        inFlight,
        sockets: count(httpAgent.sockets) + count(httpsAgent.sockets),
        freeSockets: count(httpAgent.freeSockets) + count(httpsAgent.freeSockets),
        queued: count(httpAgent.requests) + count(httpsAgent.requests),
      };
    },
    close(): void {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}
