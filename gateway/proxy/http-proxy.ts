/**
 * The http-proxy engine (`gateway.engine` = `http-proxy`, the default): the gateway's one
 * wrapper around http-proxy 1.18.1; no other file imports http-proxy. The contract is in
 * `index.ts`.
 *
 * `forward()` sends one admitted call upstream and reports exactly once how it went. It owns:
 * - keep-alive agents with bounded sockets, and an idle timeout on every upstream socket;
 * - two clocks per call: the caller's (`clientBodyTimeoutMs` between request-body chunks; a
 *   caller that stalls gets 408 `svc_request_timeout`) and the provider's (the endpoint's
 *   timeout, from the moment the last request byte was handed upstream, so a slow caller is
 *   never blamed on the provider), with an upstream timeout (504) told apart from a reset (502);
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
import http, { type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import httpProxy from 'http-proxy';
import { DEFAULT_CLIENT_BODY_TIMEOUT_MS } from '../../config/defaults';
import { sendProblem } from '../../protocol/http';
import type { CallerFailure, NetworkError } from '../request/classify';
import { clientResponseHeaders, headerListObject, type HeaderList } from '../request/headers';
import { declaredLength, networkErrorOf, sendCallerFailure, sendNetworkFailure } from './failures';
import { DEFAULT_FREE_SOCKET_TIMEOUT_MS, DEFAULT_MAX_FREE_SOCKETS, DEFAULT_MAX_SOCKETS } from './defaults';
import type {
  BodyObserver,
  ForwardDone,
  ForwardFailure,
  ForwardResult,
  ForwardTarget,
  GatewayProxy,
  ProxyOptions,
  ProxyStats,
  ResponseHead,
  ResponseHeadHook,
} from './index';

const ignore = (): void => {};

type Pass = ((...args: unknown[]) => unknown) & { name: string };

function count(table: NodeJS.ReadOnlyDict<unknown[]>): number {
  let n = 0;
  for (const key in table) n += table[key]?.length ?? 0;
  return n;
}

/** The http-proxy engine (`gateway.engine` = `http-proxy`). One per gateway process. */
export function createHttpProxyEngine(options: ProxyOptions = {}): GatewayProxy {
  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSockets ?? DEFAULT_MAX_SOCKETS,
    maxFreeSockets: options.maxFreeSockets ?? DEFAULT_MAX_FREE_SOCKETS,
    timeout: options.freeSocketTimeoutMs ?? DEFAULT_FREE_SOCKET_TIMEOUT_MS,
    scheduling: 'lifo' as const,
  };
  const clientBodyTimeoutMs = options.clientBodyTimeoutMs ?? DEFAULT_CLIENT_BODY_TIMEOUT_MS;
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
    // The provider's clock starts when the last request byte is handed upstream (or at the
    // response head, if the upstream answers first); the caller's time is never counted.
    let clockStart = -1;
    let deadline: NodeJS.Timeout | undefined;
    // The caller's clock: the longest pause between request-body chunks, armed while the call
    // waits for the caller's body and not while the upstream holds the body back.
    let bodyTimer: NodeJS.Timeout | undefined;
    let heldByUpstream = false;
    inFlight++;

    const providerMs = (): number => (clockStart < 0 ? 0 : Math.round(performance.now() - clockStart));
    const elapsed = (): number => (latency >= 0 ? latency : providerMs());
    // Every path first claims the call's single result, then cleans up, then reports: cleanup
    // (destroying the upstream) fires events whose handlers then see the call as settled.
    const claim = (): boolean => {
      if (finished) return false;
      finished = true;
      inFlight--;
      clearTimeout(deadline);
      clearTimeout(bodyTimer);
      return true;
    };
    const report = (networkError: ForwardFailure | null, sentStatus: number | null, internalError?: unknown): void => {
      const result: ForwardResult = { status, sentStatus, networkError, upstreamLatencyMs: elapsed() };
      if (internalError !== undefined) result.internalError = internalError;
      done(result);
    };
    const reportCaller = (kind: CallerFailure, sentStatus: number | null): void => {
      latency = Math.round(performance.now() - started);
      report(kind, sentStatus);
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
    // Run the head hook for forward()'s own answer; false (and a 500 sent) if it threw.
    const ownHead = (head: ResponseHead): boolean => {
      try {
        onHead?.(head);
        return true;
      } catch (err) {
        respondInternal(err);
        return false;
      }
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
      if (latency < 0) latency = providerMs();
      const headers: HeaderList = [];
      if (!ownHead({ status: sent, headers, fromUpstream: false, networkError: kind, callerFailure: null, upstreamLatencyMs: latency })) return;
      sendNetworkFailure(res, kind, target.timeoutMs, headerListObject(headers) as Record<string, string>);
      report(kind, sent);
    };
    // The caller broke its own request (a body over the limit, or one that stalled): the
    // upstream request is destroyed, the caller gets 413/408 and the connection is closed.
    const failCaller = (kind: 'body_too_large' | 'client_timeout'): void => {
      if (!claim()) return;
      req.pause();
      abortUpstream();
      if (res.headersSent || res.destroyed) {
        res.destroy();
        reportCaller(kind, status);
        return;
      }
      const sent = kind === 'client_timeout' ? 408 : 413;
      const headers: HeaderList = ['connection', 'close'];
      const head: ResponseHead = { status: sent, headers, fromUpstream: false, networkError: null, callerFailure: kind, upstreamLatencyMs: Math.round(performance.now() - started) };
      if (!ownHead(head)) return;
      sendCallerFailure(res, kind, { clientBodyTimeoutMs, bodyLimitBytes: target.bodyLimitBytes }, headerListObject(headers) as Record<string, string>);
      reportCaller(kind, sent);
    };

    const onDeadline = (): void => {
      timedOut = true;
      fail('timeout');
    };
    const startDeadline = (): void => {
      if (deadline === undefined && !finished) deadline = setTimeout(onDeadline, target.timeoutMs);
    };
    const stopDeadline = (): void => {
      clearTimeout(deadline);
      deadline = undefined;
    };

    res.on('finish', () => {
      if (upstreamRes !== null && claim()) report(null, status);
    });
    // The caller left: nobody is waiting for this call any more.
    const callerLeft = (): void => {
      if (res.writableFinished || !claim()) return;
      abortUpstream();
      res.destroy();
      reportCaller('client_abort', res.headersSent ? status : null);
    };
    const callerGone = (): boolean => req.socket.destroyed && !res.writableFinished;
    res.on('close', callerLeft);
    req.on('error', callerLeft);

    const onResponse = (incoming: IncomingMessage): void => {
      if (finished) {
        incoming.destroy();
        return;
      }
      stopDeadline();
      upstreamRes = incoming;
      status = incoming.statusCode ?? 502;
      if (clockStart < 0) clockStart = performance.now();
      latency = providerMs();
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
      const head: ResponseHead = { status, headers, fromUpstream: true, networkError: null, callerFailure: null, upstreamLatencyMs: latency };
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
          // The caller reads slower than the upstream sends: that wait is the caller's, so the
          // upstream socket's idle timeout stops until the caller has taken what it has.
          incoming.pause();
          incoming.socket?.setTimeout(0);
          out.once('drain', () => {
            // Not once the answer is complete: its socket may be back in the agent's idle pool.
            if (!incoming.complete) incoming.socket?.setTimeout(target.timeoutMs);
            incoming.resume();
          });
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
    const expectsBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
    // The caller's body, streamed with backpressure and counted against the limit.
    const body = {
      pipe(dest: ClientRequest): ClientRequest {
        upstreamReq = dest;
        let seen = 0;
        if (expectsBody) {
          bodyTimer = setTimeout(() => {
            if (!heldByUpstream) failCaller('client_timeout');
          }, clientBodyTimeoutMs);
        }
        req.on('data', (chunk: Buffer) => {
          if (finished) return;
          if (limit !== undefined && (seen += chunk.length) > limit) return failCaller('body_too_large');
          bodyTimer?.refresh();
          if (!dest.write(chunk)) {
            // Waiting on the upstream now: its clock runs, the caller's does not.
            req.pause();
            heldByUpstream = true;
            if (upstreamRes === null) startDeadline();
            dest.once('drain', () => {
              if (finished) return;
              heldByUpstream = false;
              if (upstreamRes === null) stopDeadline();
              bodyTimer?.refresh();
              req.resume();
            });
          }
        });
        req.on('end', () => {
          if (finished) return;
          clearTimeout(bodyTimer);
          dest.end();
          // The last request byte is upstream's now: the provider's clock starts.
          if (clockStart < 0) clockStart = performance.now();
          if (upstreamRes === null) {
            stopDeadline();
            startDeadline();
          }
          dest.setTimeout(target.timeoutMs, () => {
            timedOut = true;
            dest.destroy();
          });
        });
        dest.on('response', onResponse);
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
        // No proxyTimeout: http-proxy would arm it on the socket before the caller's body has
        // arrived. The idle timeout is set above once the body is sent.
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
    engine: 'http-proxy',
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
