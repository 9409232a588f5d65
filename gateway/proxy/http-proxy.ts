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
import httpProxy from 'http-proxy';
import { DEFAULT_CLIENT_BODY_TIMEOUT_MS } from '../../config/defaults';
import { InvariantError } from '../../protocol/coded-error';
import { clientResponseHeaders, headerListValue } from './headers';
import { ForwardCall, type EngineCounters } from './call';
import { declaredLength, networkErrorOf } from './failures';
import { DEFAULT_FREE_SOCKET_TIMEOUT_MS, DEFAULT_MAX_FREE_SOCKETS, DEFAULT_MAX_SOCKETS } from './defaults';
import type { ForwardDone, ForwardTarget, GatewayProxy, ProxyOptions, ProxyStats, ResponseHeadHook } from './contract';

const ignore = (): void => {};

type Pass = ((...args: unknown[]) => unknown) & { name: string };

function count(table: NodeJS.ReadOnlyDict<unknown[]>): number {
  let n = 0;
  for (const key in table) n += table[key]?.length ?? 0;
  return n;
}

/** What every call of one http-proxy engine shares. */
interface Engine extends EngineCounters {
  /** http-proxy's `stream` web pass, run alone for each call. */
  readonly streamPass: Pass;
  /** The proxy server that carries http-proxy's events. */
  readonly server: unknown;
  readonly httpAgent: http.Agent;
  readonly httpsAgent: http.Agent;
  /** http-proxy's target object for an endpoint's upstream URL (one per URL). */
  targetOf(origin: URL): object;
}

/**
 * One forwarded call on http-proxy. It is also the `buffer` http-proxy pipes the request body
 * from: http-proxy creates the upstream request inside its pass and hands out no reference
 * until it has a socket, but it does call `options.buffer.pipe(upstreamRequest)`.
 */
class HttpProxyCall extends ForwardCall {
  private upstreamReq: ClientRequest | null = null;
  private upstreamRes: IncomingMessage | null = null;
  /** The caller's request declares a body (read before its headers are replaced by the upstream's). */
  private readonly expectsBody: boolean;
  private seen = 0;

  constructor(
    private readonly proxy: Engine,
    req: IncomingMessage,
    res: ServerResponse,
    target: ForwardTarget,
    done: ForwardDone,
    onHead: ResponseHeadHook | undefined,
  ) {
    super(proxy, req, res, target, done, onHead);
    this.expectsBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
  }

  start(): void {
    this.begin();
    const { req, res, target, proxy } = this;
    req.url = target.path;
    req.headers = target.headers as IncomingMessage['headers'];
    const isHttps = target.origin.protocol === 'https:';
    try {
      proxy.streamPass(
        req,
        res,
        {
          selfHandleResponse: true,
          toProxy: true, // use req.url verbatim: no url.parse() of the caller's path
          prependPath: false,
          ignorePath: false,
          changeOrigin: false, // Host comes from headers.ts
          followRedirects: false,
          secure: true,
          target: proxy.targetOf(target.origin),
          agent: isHttps ? proxy.httpsAgent : proxy.httpAgent,
          // No proxyTimeout: http-proxy would arm it on the socket before the caller's body has
          // arrived. The provider's clock is the call's own timer (call.ts): the deadline for the
          // head, then the idle timeout between body chunks, refreshed by each chunk.
          buffer: this,
        },
        undefined,
        proxy.server,
        ignore,
      );
    } catch (err) {
      // http.request() throws synchronously for headers or paths Node will not send.
      this.internal(err);
      return;
    }
    if (this.upstreamReq === null) this.internal(new InvariantError('http-proxy did not create an upstream request'));
  }

  protected abortUpstream(): void {
    if (this.responding) this.upstreamRes?.destroy();
    this.upstreamReq?.destroy();
  }

  // ---- the caller's body, streamed with backpressure and counted against the limit -----

  /** Called by http-proxy with the upstream request it created. */
  pipe(dest: ClientRequest): ClientRequest {
    this.upstreamReq = dest;
    if (this.expectsBody) this.startBodyClock();
    this.req.on('data', this.onCallerData);
    this.req.on('end', this.onCallerEnd);
    dest.on('response', this.onResponse);
    dest.on('error', this.onUpstreamError);
    return dest;
  }

  private readonly onCallerData = (chunk: Buffer): void => {
    if (this.finished) return;
    const limit = this.target.bodyLimitBytes;
    if (limit !== undefined && (this.seen += chunk.length) > limit) return this.failCaller('body_too_large');
    this.bodyTimer?.refresh();
    const dest = this.upstreamReq!;
    if (!dest.write(chunk)) {
      this.upstreamFull();
      dest.once('drain', this.upstreamWants);
    }
  };

  private readonly onCallerEnd = (): void => {
    if (this.finished) return;
    this.stopBodyClock();
    this.upstreamReq!.end();
    this.bodySent();
  };

  private readonly onUpstreamError = (err: Error): void => {
    if (this.finished) return;
    if (this.callerGone()) return this.callerLeft();
    this.fail(this.timedOut ? 'timeout' : networkErrorOf(err));
  };

  // ---- the answer ----------------------------------------------------------------------

  private readonly onResponse = (incoming: IncomingMessage): void => {
    if (this.finished) {
      incoming.destroy();
      return;
    }
    this.upstreamRes = incoming;
    incoming.on('aborted', this.onAnswerBroken);
    incoming.on('error', this.onAnswerBroken);
    // The declared length from the list being sent: `incoming.headers` would build an object of
    // every field (Node makes it on first read) only to read one.
    const headers = clientResponseHeaders(incoming.rawHeaders);
    if (!this.upstreamHead(incoming.statusCode ?? 502, headers, declaredLength(headerListValue(headers, 'content-length')))) return;
    incoming.on('data', this.onAnswerData);
    incoming.on('end', this.onAnswerEnd);
  };

  private readonly onAnswerData = (chunk: Buffer): void => {
    this.refreshDeadline();
    if (this.passChunk(chunk)) return;
    // The caller reads slower than the upstream sends: that wait is the caller's, so the idle
    // timeout stops until the caller has taken what it has.
    this.upstreamRes!.pause();
    this.stopDeadline();
    this.res.once('drain', this.onCallerDrain);
  };

  private readonly onCallerDrain = (): void => {
    if (this.finished) return;
    const incoming = this.upstreamRes!;
    if (!incoming.complete) this.startDeadline();
    incoming.resume();
  };

  private readonly onAnswerEnd = (): void => {
    this.stopDeadline();
    this.bodyEnded();
  };

  /** The answer broke off mid-body: the caller's connection is cut. */
  private readonly onAnswerBroken = (): void => {
    if (this.finished) return;
    if (this.callerGone()) return this.callerLeft();
    if (!this.claim()) return;
    this.upstreamReq?.destroy();
    this.res.destroy();
    this.report(this.timedOut ? 'timeout' : 'reset', this.status);
  };
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
  // http-proxy has no public API for one pass (`web()` always runs them all), so this reads
  // the server's undocumented `webPasses` array. That is why package.json pins http-proxy at
  // exactly 1.18.1 (no range; its last release): the field cannot change under us, and should
  // an upgrade drop it, the check below fails at start-up rather than on a call.
  const stream = (server as unknown as { webPasses: Pass[] }).webPasses.find((pass) => pass.name === 'stream');
  if (stream === undefined) throw new InvariantError('http-proxy web passes changed: no stream pass');

  const targets = new WeakMap<URL, object>();
  const engine: Engine = {
    clientBodyTimeoutMs: options.clientBodyTimeoutMs ?? DEFAULT_CLIENT_BODY_TIMEOUT_MS,
    inFlight: 0,
    streamPass: stream,
    server,
    httpAgent,
    httpsAgent,
    targetOf(origin: URL): object {
      let target = targets.get(origin);
      if (target === undefined) {
        const hostname = origin.hostname.startsWith('[') ? origin.hostname.slice(1, -1) : origin.hostname;
        target = {
          protocol: origin.protocol,
          hostname,
          host: hostname,
          port: origin.port || (origin.protocol === 'https:' ? '443' : '80'),
        };
        targets.set(origin, target);
      }
      return target;
    },
  };

  return {
    engine: 'http-proxy',
    forward(req: IncomingMessage, res: ServerResponse, target: ForwardTarget, done: ForwardDone, onHead?: ResponseHeadHook): void {
      new HttpProxyCall(engine, req, res, target, done, onHead).start();
    },
    stats(): ProxyStats {
      return {
        inFlight: engine.inFlight,
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
