/**
 * The undici engine (`gateway.engine` = `undici`): the forwarding contract of `index.ts` on
 * undici's dispatcher API. Only this file and `undici-pool.ts` import undici.
 *
 * Each call is one `Client.dispatch()` with this file's `UndiciCall` as the handler: no stream or
 * promise per call; the response head arrives as raw header buffers for `clientResponseHeaders()`.
 * Connections come from `undici-pool.ts` (keep-alive, pipelining 1, bounded per origin); calls
 * beyond `maxSockets` wait there, so a caller that leaves meanwhile costs the upstream nothing.
 * The caller's body is pushed into a `Readable` undici reads: past 16 KiB undici has not taken,
 * the caller is paused and the provider's clock runs, as with the http-proxy engine's
 * `ClientRequest`. A body without a declared length is sent chunked (undici frames it).
 *
 * Timeouts (gateway/README.md, "Engines", has what was measured): the deadline for the response
 * head is the engine's own timer, started where the http-proxy engine starts it; undici's
 * `headersTimeout` (off) ticks on ~0.5 s timers and does not count the wait for a connection.
 * After the head, undici's `bodyTimeout` (`timeoutMs`) is the idle timeout between body chunks;
 * it does not run while the caller's backpressure pauses the answer. No connect timeout: the
 * deadline covers connecting. Redirects are never followed (undici follows none by itself).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { buildConnector, type Client, type Dispatcher } from 'undici';
import { DEFAULT_CLIENT_BODY_TIMEOUT_MS } from '../../config/defaults';
import { sendProblem } from '../../protocol/http';
import type { CallerFailure, NetworkError } from '../request/classify';
import { clientResponseHeaders, headerListObject, headerListValue, type HeaderList } from '../request/headers';
import { DEFAULT_FREE_SOCKET_TIMEOUT_MS, DEFAULT_MAX_FREE_SOCKETS, DEFAULT_MAX_SOCKETS } from './defaults';
import { declaredLength, networkErrorOf, sendCallerFailure, sendNetworkFailure } from './failures';
import { RequestBody, requestHeaders } from './undici-body';
import { OriginPool, type Conn } from './undici-pool';
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

/**
 * Largest declared request body that is handed to undici as one buffer when it arrives in one
 * chunk (the usual small JSON call); larger ones, and chunked ones, are streamed. @default 64 KiB
 */
const WHOLE_BODY_MAX_BYTES = 64 * 1024;

/** The reason handed to undici when the gateway ends a call itself (never reported). */
const CANCELLED = new Error('the call was ended by the gateway');

/** undici errors that are the gateway's own fault: a request it refused to build. */
const GATEWAY_FAULTS: ReadonlySet<string> = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED']);
/** undici errors that mean the upstream took too long. */
const TIMEOUTS: ReadonlySet<string> = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

const codeOf = (err: unknown): string | undefined => (err as { code?: string } | null)?.code;

/** What every call of one engine shares. */
interface Engine {
  clientBodyTimeoutMs: number;
  inFlight: number;
}

type Origin = OriginPool<UndiciCall>;

/** Raw response header buffers as strings (latin1, as Node's own parser decodes them). */
function rawStrings(raw: Buffer[]): string[] {
  const out = new Array<string>(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw[i]!.toString('latin1');
  return out;
}

/** One forwarded call; also the undici dispatch handler for it. */
class UndiciCall implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private finished = false;
  private timedOut = false;
  /** The upstream's response head arrived (and was written to the caller). */
  private responding = false;
  private status: number | null = null;
  private latency = -1;
  /** The provider's clock: from the last request byte handed upstream (-1: not started). */
  private clockStart = -1;
  private deadline: NodeJS.Timeout | undefined;
  /** The caller's clock: the longest pause between request-body chunks. */
  private bodyTimer: NodeJS.Timeout | undefined;
  private heldByUpstream = false;
  /** The request body undici reads (null: none, or not needed). */
  private body: RequestBody | null = null;
  /** A small declared body whose first chunk has not arrived: the call is not handed on yet. */
  private deferred = false;
  /** The request body's declared length (-1: none, chunked). */
  private declared = -1;
  /** The declared body arrived whole in its first chunk and went to undici as one buffer. */
  private whole = false;
  /** That buffer, while the call waits for a connection. */
  private wholeBody: Buffer | null = null;
  private seen = 0;
  /** The connection carrying the call (null while it waits for one). */
  private conn: Conn | null = null;
  /** undici has started writing the call on its connection. */
  private onConnection = false;
  /** undici is done with the call (completed or failed); its connection went back. */
  private released = false;
  // The response body on its way to the caller.
  private resumeUpstream: (() => void) | null = null;
  private remaining = -1;
  private held: Buffer | undefined;
  private observer: BodyObserver | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly origin: Origin,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly target: ForwardTarget,
    private readonly done: ForwardDone,
    private readonly onHead: ResponseHeadHook | undefined,
  ) {}

  start(): void {
    const { req, res } = this;
    this.engine.inFlight++;
    res.on('finish', this.onFinish);
    res.on('close', this.callerLeft);
    req.on('error', this.callerLeft);
    const declared = (this.declared = req.headers['transfer-encoding'] === undefined ? Number(req.headers['content-length'] ?? '0') : -1);
    if (declared !== 0) {
      this.bodyTimer = setTimeout(this.onBodyStalled, this.engine.clientBodyTimeoutMs);
      req.on('data', this.onCallerData);
      req.on('end', this.onCallerEnd);
      // A small declared body usually arrives in one chunk, just after the head: the call waits
      // for that chunk and, when it is the whole body, goes upstream in one write with it.
      if (declared > 0 && declared <= WHOLE_BODY_MAX_BYTES) {
        this.deferred = true;
        return;
      }
      this.body = new RequestBody();
    } else {
      // Nothing to wait for: the provider's clock starts at once.
      this.clockStart = performance.now();
      this.startDeadline();
      req.resume();
    }
    this.handOn(null);
  }

  /** Take a connection for the call (or wait for one); `whole` is the complete request body, if any. */
  private handOn(whole: Buffer | null): void {
    this.deferred = false;
    this.whole = whole !== null;
    const conn = this.origin.acquire();
    if (conn !== null) this.dispatch(conn, whole);
    else {
      this.wholeBody = whole;
      this.origin.waiting.add(this);
    }
  }

  /** Put the call on `conn`. undici may call back into the handler before this returns. */
  dispatch(conn: Conn, whole: Buffer | null = this.wholeBody): void {
    this.conn = conn;
    this.wholeBody = null;
    conn.client.dispatch(
      {
        path: this.target.path,
        method: this.req.method ?? 'GET',
        headers: requestHeaders(this.target.headers) as Record<string, string | string[]>,
        body: whole ?? this.body,
        headersTimeout: 0,
        bodyTimeout: this.target.timeoutMs,
      },
      this,
    );
  }

  // ---- undici's side -----------------------------------------------------------------

  onConnect(): void {
    // Ended while its connection was being opened: cancel before any byte is written. undici
    // catches this, fails the request (onError) and keeps the connection for the next call.
    if (this.finished) throw CANCELLED;
    this.onConnection = true;
    this.conn!.atHead = true;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // 1xx answers are the hop's business, as with Node's own client: never passed on.
    if (statusCode < 200) return true;
    if (this.finished) return false;
    this.stopDeadline();
    this.responding = true;
    this.status = statusCode;
    if (this.clockStart < 0) this.clockStart = performance.now();
    this.latency = this.providerMs();
    const headers = clientResponseHeaders(rawStrings(rawHeaders));
    this.remaining = declaredLength(headerListValue(headers, 'content-length'));
    const head: ResponseHead = { status: statusCode, headers, fromUpstream: true, networkError: null, callerFailure: null, upstreamLatencyMs: this.latency };
    try {
      this.onHead?.(head);
    } catch (err) {
      this.internal(err);
      return false;
    }
    try {
      this.res.writeHead(statusCode, headers);
    } catch (err) {
      // A head Node refuses to write is the upstream's fault.
      this.responding = false;
      this.status = null;
      this.fail(networkErrorOf(err));
      return false;
    }
    this.resumeUpstream = resume;
    this.observer = head.body;
    return true;
  }

  // The answer's bytes go to the caller as they arrive, except the last chunk of a body with a
  // declared length: it is written together with the end, once the body observer released it.
  onData(chunk: Buffer): boolean {
    if (this.finished) return false;
    this.observer?.chunk?.(chunk);
    if (this.remaining >= 0 && (this.remaining -= chunk.length) <= 0) {
      if (this.held === undefined) {
        this.held = chunk;
        return true;
      }
      this.res.write(this.held); // not reached with a conforming parser: the length ended at `held`
      this.held = undefined;
    }
    if (this.res.write(chunk)) return true;
    // The caller reads slower than the upstream sends: undici stops reading (and its body
    // timeout does not run) until the caller has taken what it has.
    this.res.once('drain', this.onCallerDrain);
    return false;
  }

  onComplete(): void {
    this.release();
    if (this.finished) return;
    const observer = this.observer;
    if (observer === undefined) return void this.res.end(this.held);
    try {
      observer.end((err) => {
        if (this.finished) return;
        if (err === null) this.res.end(this.held);
        else this.internal(err);
      });
    } catch (err) {
      this.internal(err);
    }
  }

  onError(err: Error): void {
    this.release();
    if (this.finished) return;
    if (this.callerGone()) return this.callerLeft();
    const code = codeOf(err);
    if (!this.responding) {
      if (code !== undefined && GATEWAY_FAULTS.has(code)) return this.internal(err);
      return this.fail(this.timedOut || (code !== undefined && TIMEOUTS.has(code)) ? 'timeout' : networkErrorOf(err));
    }
    // The body broke off: the caller must not take the truncated answer for a whole one.
    if (!this.claim()) return;
    this.res.destroy();
    this.report(code !== undefined && TIMEOUTS.has(code) ? 'timeout' : 'reset', this.status);
  }

  // ---- the caller's side ---------------------------------------------------------------

  private readonly onCallerData = (chunk: Buffer): void => {
    if (this.finished) return;
    const limit = this.target.bodyLimitBytes;
    if ((this.seen += chunk.length) > (limit ?? Infinity)) return this.failCaller('body_too_large');
    this.bodyTimer?.refresh();
    if (this.deferred) {
      if (this.seen === this.declared) {
        // The whole body: handed upstream now, so the provider's clock starts.
        clearTimeout(this.bodyTimer);
        this.clockStart = performance.now();
        this.startDeadline();
        return this.handOn(chunk);
      }
      this.body = new RequestBody();
      this.handOn(null);
    }
    const body = this.body!;
    if (!body.push(chunk)) {
      // Waiting on the upstream now: its clock runs, the caller's does not.
      this.req.pause();
      this.heldByUpstream = true;
      if (!this.responding) this.startDeadline();
      body.wanted = this.onBodyWanted;
    }
  };

  private readonly onBodyWanted = (): void => {
    if (this.finished) return;
    this.heldByUpstream = false;
    if (!this.responding) this.stopDeadline();
    this.bodyTimer?.refresh();
    this.req.resume();
  };

  private readonly onCallerEnd = (): void => {
    if (this.finished) return;
    clearTimeout(this.bodyTimer);
    // Already handed on whole, or (never with Node's parser) a declared body that did not come.
    if (this.whole || this.deferred) return;
    this.body!.push(null);
    // The last request byte is upstream's now: the provider's clock starts.
    if (this.clockStart < 0) this.clockStart = performance.now();
    if (!this.responding) {
      this.stopDeadline();
      this.startDeadline();
    }
  };

  private readonly onBodyStalled = (): void => {
    if (!this.heldByUpstream) this.failCaller('client_timeout');
  };

  private readonly onCallerDrain = (): void => {
    if (!this.finished) this.resumeUpstream?.();
  };

  private readonly onFinish = (): void => {
    if (this.responding && this.claim()) this.report(null, this.status);
  };

  /** The caller left: nobody is waiting for this call any more. */
  private readonly callerLeft = (): void => {
    if (this.res.writableFinished || !this.claim()) return;
    this.abortUpstream();
    this.res.destroy();
    this.reportCaller('client_abort', this.res.headersSent ? this.status : null);
  };

  private callerGone(): boolean {
    return this.req.socket.destroyed && !this.res.writableFinished;
  }

  // ---- ending the call ---------------------------------------------------------------

  private providerMs(): number {
    return this.clockStart < 0 ? 0 : Math.round(performance.now() - this.clockStart);
  }

  /**
   * Every path first claims the call's single result, then cleans up, then reports: cleanup
   * (aborting the upstream) calls back into the handler, which then sees the call as settled.
   */
  private claim(): boolean {
    if (this.finished) return false;
    this.finished = true;
    this.engine.inFlight--;
    clearTimeout(this.deadline);
    clearTimeout(this.bodyTimer);
    return true;
  }

  private report(networkError: ForwardFailure | null, sentStatus: number | null, internalError?: unknown): void {
    const result: ForwardResult = { status: this.status, sentStatus, networkError, upstreamLatencyMs: this.latency >= 0 ? this.latency : this.providerMs() };
    if (internalError !== undefined) result.internalError = internalError;
    this.done(result);
  }

  private reportCaller(kind: CallerFailure, sentStatus: number | null): void {
    this.latency = Math.round(performance.now() - this.started);
    this.report(kind, sentStatus);
  }

  /** Stop the upstream side of the call, wherever it is. */
  private abortUpstream(): void {
    if (this.conn === null) {
      this.origin.waiting.delete(this); // never reached a connection
    } else if (this.onConnection && !this.released) {
      // Destroy the connection, as destroying a ClientRequest does. Not with undici's own abort:
      // it closes the socket with an informational error, after which the Client puts the call
      // back in its queue and opens a new connection only to drop it (nodejs/undici#5845).
      // Failed this way, the call is dropped as the connection's head and nothing reconnects.
      const socket = this.conn.socket;
      if (socket !== null && !socket.destroyed) socket.destroy(CANCELLED);
    }
    // On a connection being opened: onConnect cancels it.
    this.body?.destroy();
  }

  /** undici is done with the call: its connection goes to the next waiting call, or idles. */
  private release(): void {
    if (this.conn === null || this.released) return;
    this.released = true;
    this.origin.release(this.conn);
  }

  // A fault of the gateway itself (a throwing hook, a request undici will not build): 500.
  private respondInternal(err: unknown): void {
    const sent = this.res.headersSent ? null : 500;
    if (sent !== null) sendProblem(this.res, 'svc_internal', 'the request could not be forwarded');
    else this.res.destroy();
    this.report(null, sent, err);
  }

  private internal(err: unknown): void {
    if (!this.claim()) return;
    this.abortUpstream();
    this.respondInternal(err);
  }

  /** Run the head hook for forward()'s own answer; false (and a 500 sent) if it threw. */
  private ownHead(head: ResponseHead): boolean {
    try {
      this.onHead?.(head);
      return true;
    } catch (err) {
      this.respondInternal(err);
      return false;
    }
  }

  /** Answer a failure before any head was sent; after it, cut the caller's connection. */
  fail(kind: NetworkError): void {
    if (!this.claim()) return;
    this.abortUpstream();
    const res = this.res;
    if (res.headersSent || res.destroyed) {
      res.destroy();
      this.report(kind, this.status);
      return;
    }
    const sent = kind === 'timeout' ? 504 : 502;
    if (this.latency < 0) this.latency = this.providerMs();
    const headers: HeaderList = [];
    if (!this.ownHead({ status: sent, headers, fromUpstream: false, networkError: kind, callerFailure: null, upstreamLatencyMs: this.latency })) return;
    sendNetworkFailure(res, kind, this.target.timeoutMs, headerListObject(headers) as Record<string, string>);
    this.report(kind, sent);
  }

  /**
   * The caller broke its own request (a body over the limit, or one that stalled): the
   * upstream request is stopped, the caller gets 413/408 and the connection is closed.
   */
  private failCaller(kind: 'body_too_large' | 'client_timeout'): void {
    if (!this.claim()) return;
    this.req.pause();
    this.abortUpstream();
    const res = this.res;
    if (res.headersSent || res.destroyed) {
      res.destroy();
      this.reportCaller(kind, this.status);
      return;
    }
    const sent = kind === 'client_timeout' ? 408 : 413;
    const headers: HeaderList = ['connection', 'close'];
    const head: ResponseHead = { status: sent, headers, fromUpstream: false, networkError: null, callerFailure: kind, upstreamLatencyMs: Math.round(performance.now() - this.started) };
    if (!this.ownHead(head)) return;
    sendCallerFailure(res, kind, { clientBodyTimeoutMs: this.engine.clientBodyTimeoutMs, bodyLimitBytes: this.target.bodyLimitBytes }, headerListObject(headers) as Record<string, string>);
    this.reportCaller(kind, sent);
  }

  private readonly onDeadline = (): void => {
    this.timedOut = true;
    this.fail('timeout');
  };

  private startDeadline(): void {
    if (this.deadline === undefined && !this.finished) this.deadline = setTimeout(this.onDeadline, this.target.timeoutMs);
  }

  private stopDeadline(): void {
    clearTimeout(this.deadline);
    this.deadline = undefined;
  }
}

/** The undici engine (`gateway.engine` = `undici`). One per gateway process. */
export function createUndiciEngine(options: ProxyOptions = {}): GatewayProxy {
  const freeSocketTimeoutMs = options.freeSocketTimeoutMs ?? DEFAULT_FREE_SOCKET_TIMEOUT_MS;
  const engine: Engine = { clientBodyTimeoutMs: options.clientBodyTimeoutMs ?? DEFAULT_CLIENT_BODY_TIMEOUT_MS, inFlight: 0 };
  const limits = { maxSockets: options.maxSockets ?? DEFAULT_MAX_SOCKETS, maxFreeSockets: options.maxFreeSockets ?? DEFAULT_MAX_FREE_SOCKETS };
  const clientOptions: Client.Options = {
    pipelining: 1,
    keepAliveTimeout: freeSocketTimeoutMs,
    // An upstream's `Keep-Alive: timeout=N` may shorten the idle time, never lengthen it.
    keepAliveMaxTimeout: freeSocketTimeoutMs,
    // The engine's own deadline and undici's per-call bodyTimeout (see the top of this file).
    headersTimeout: 0,
    bodyTimeout: 0,
  };
  // No connect timeout: the call's deadline covers connecting, as with the http-proxy engine.
  // One connector for every connection, so TLS sessions are reused.
  const connector = buildConnector({ timeout: 0 });
  let origins = new Map<string, Origin>();
  let byUrl = new WeakMap<URL, Origin>();

  function originOf(url: URL): Origin {
    let origin = byUrl.get(url);
    if (origin === undefined) {
      origin = origins.get(url.origin);
      if (origin === undefined) {
        origin = new OriginPool<UndiciCall>(url.origin, limits, clientOptions, connector);
        origins.set(url.origin, origin);
      }
      byUrl.set(url, origin);
    }
    return origin;
  }

  return {
    engine: 'undici',
    forward(req: IncomingMessage, res: ServerResponse, target: ForwardTarget, done: ForwardDone, onHead?: ResponseHeadHook): void {
      new UndiciCall(engine, originOf(target.origin), req, res, target, done, onHead).start();
    },
    stats(): ProxyStats {
      let sockets = 0;
      let freeSockets = 0;
      let queued = 0;
      for (const origin of origins.values()) {
        sockets += origin.busy;
        freeSockets += origin.freeSockets();
        queued += origin.waiting.size;
      }
      return { inFlight: engine.inFlight, sockets, freeSockets, queued };
    },
    close(): void {
      const closing = [...origins.values()];
      origins = new Map();
      byUrl = new WeakMap();
      // Calls on a connection fail as resets when their Client is destroyed; waiting ones here.
      for (const origin of closing) for (const call of origin.destroy()) call.fail('reset');
    },
  };
}
