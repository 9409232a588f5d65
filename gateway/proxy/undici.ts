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
 * After the head, the same timer, re-armed, is the idle timeout between body chunks (`timeoutMs`,
 * as undici's `bodyTimeout` would be): refreshed by every chunk, stopped while the caller's
 * backpressure pauses the answer. Not undici's own `bodyTimeout`: that one is a timer on
 * undici's 1-second clock which, cleared, stays referenced until the clock's next sweep, so
 * every call left one timer (and its WeakRef) to be promoted to the old generation: ~100 of
 * the engine's ~130 promoted bytes per call, and about half its major collections (bench/README.md).
 * No connect timeout: the deadline covers connecting. Redirects are never followed (undici
 * follows none by itself).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { buildConnector, type Client, type Dispatcher } from 'undici';
import { DEFAULT_CLIENT_BODY_TIMEOUT_MS } from '../../config/defaults';
import { CodedError } from '../../protocol/coded-error';
import { clientResponseHeaders, headerListValue } from './headers';
import { ForwardCall, type EngineCounters } from './call';
import { DEFAULT_FREE_SOCKET_TIMEOUT_MS, DEFAULT_MAX_FREE_SOCKETS, DEFAULT_MAX_SOCKETS } from './defaults';
import { declaredLength, networkErrorOf } from './failures';
import { RequestBody, requestHeaders } from './undici-body';
import { OriginPool, type Conn } from './undici-pool';
import type { ForwardDone, ForwardTarget, GatewayProxy, ProxyOptions, ProxyStats, ResponseHeadHook } from './contract';

/**
 * Largest declared request body that is handed to undici as one buffer when it arrives in one
 * chunk (the usual small JSON call); larger ones, and chunked ones, are streamed. @default 64 KiB
 */
const WHOLE_BODY_MAX_BYTES = 64 * 1024;

/** The reason handed to undici when the gateway ends a call itself (never reported). */
class CallCancelled extends CodedError {
  override readonly code = 'SVC_ERR_CALL_CANCELLED';
}
const CANCELLED = new CallCancelled('the call was ended by the gateway');

/** undici errors that are the gateway's own fault: a request it refused to build. */
const GATEWAY_FAULTS: ReadonlySet<string> = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED']);
/** undici errors that mean the upstream took too long. */
const TIMEOUTS: ReadonlySet<string> = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

const codeOf = (err: unknown): string | undefined => (err as { code?: string } | null)?.code;

type Origin = OriginPool<UndiciCall>;

/** Raw response header buffers as strings (latin1, as Node's own parser decodes them). */
function rawStrings(raw: Buffer[]): string[] {
  const out = new Array<string>(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw[i]!.toString('latin1');
  return out;
}

/** One forwarded call; also the undici dispatch handler for it. */
class UndiciCall extends ForwardCall implements Dispatcher.DispatchHandler {
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
  /** Lets undici read the answer again after the caller's backpressure paused it. */
  private resumeUpstream: (() => void) | null = null;

  constructor(
    engine: EngineCounters,
    private readonly origin: Origin,
    req: IncomingMessage,
    res: ServerResponse,
    target: ForwardTarget,
    done: ForwardDone,
    onHead: ResponseHeadHook | undefined,
  ) {
    super(engine, req, res, target, done, onHead);
  }

  start(): void {
    const req = this.req;
    this.begin();
    const declared = (this.declared = req.headers['transfer-encoding'] === undefined ? Number(req.headers['content-length'] ?? '0') : -1);
    if (declared !== 0) {
      this.startBodyClock();
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
        bodyTimeout: 0,
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
    const headers = clientResponseHeaders(rawStrings(rawHeaders));
    if (!this.upstreamHead(statusCode, headers, declaredLength(headerListValue(headers, 'content-length')))) return false;
    this.resumeUpstream = resume; // the deadline is now the idle timeout between body chunks
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.finished) return false;
    this.refreshDeadline();
    if (this.passChunk(chunk)) return true;
    // The caller reads slower than the upstream sends: undici stops reading, and the idle
    // timeout does not run, until the caller has taken what it has.
    this.stopDeadline();
    this.res.once('drain', this.onCallerDrain);
    return false;
  }

  onComplete(): void {
    this.stopDeadline();
    this.release();
    this.bodyEnded();
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
        this.stopBodyClock();
        this.clockStart = performance.now();
        this.startDeadline();
        return this.handOn(chunk);
      }
      this.body = new RequestBody();
      this.handOn(null);
    }
    const body = this.body!;
    if (!body.push(chunk)) {
      this.upstreamFull();
      body.wanted = this.upstreamWants;
    }
  };

  private readonly onCallerEnd = (): void => {
    if (this.finished) return;
    this.stopBodyClock();
    // Already handed on whole, or (never with Node's parser) a declared body that did not come.
    if (this.whole || this.deferred) return;
    this.body!.push(null);
    this.bodySent();
  };

  private readonly onCallerDrain = (): void => {
    if (this.finished) return;
    this.startDeadline();
    this.resumeUpstream?.();
  };

  // ---- ending the call ---------------------------------------------------------------

  protected abortUpstream(): void {
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
}

/** The undici engine (`gateway.engine` = `undici`). One per gateway process. */
export function createUndiciEngine(options: ProxyOptions = {}): GatewayProxy {
  const freeSocketTimeoutMs = options.freeSocketTimeoutMs ?? DEFAULT_FREE_SOCKET_TIMEOUT_MS;
  const engine: EngineCounters = { clientBodyTimeoutMs: options.clientBodyTimeoutMs ?? DEFAULT_CLIENT_BODY_TIMEOUT_MS, inFlight: 0 };
  const limits = {
    maxSockets: options.maxSockets ?? DEFAULT_MAX_SOCKETS,
    maxFreeSockets: options.maxFreeSockets ?? DEFAULT_MAX_FREE_SOCKETS,
  };
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
