/**
 * One forwarded call, the part every engine shares (the contract is in `index.ts`): the call's
 * single result (claimed once, then reported), its two clocks, the answers forward() sends
 * itself (502/504, 408/413, 500), the caller leaving, and the upstream body's way to the caller
 * with the last chunk of a declared length held until the body observer releases it.
 *
 * An engine's call extends `ForwardCall` with how it reaches the upstream: it starts the call
 * (`begin`), stops it (`abortUpstream`), and turns its library's events into the calls below:
 * `upstreamFull`/`upstreamWants` while the request body streams, `bodySent` once it is out,
 * `upstreamHead`, `passChunk` and `bodyEnded` for the answer, `fail` for a network failure.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { sendProblem } from '../../runtime/http';
import { headerListObject, type HeaderList } from './headers';
import { networkErrorOf, sendCallerFailure, sendNetworkFailure } from './failures';
import type {
  BodyObserver,
  CallerFailure,
  ForwardDone,
  ForwardFailure,
  ForwardResult,
  ForwardTarget,
  NetworkError,
  ResponseHead,
  ResponseHeadHook,
} from './contract';

/** What every call of one engine shares. */
export interface EngineCounters {
  readonly clientBodyTimeoutMs: number;
  /** forward() calls not reported yet. */
  inFlight: number;
}

/**
 * Calls whose caller's clock is armed at the end of the current event-loop turn (see
 * `startBodyClock`), and the one `setImmediate` per turn that arms them.
 */
const clocksToArm: ForwardCall[] = [];

function armBodyClocks(): void {
  for (let i = 0; i < clocksToArm.length; i++) clocksToArm[i]!.armBodyClock();
  clocksToArm.length = 0;
}

export abstract class ForwardCall {
  protected finished = false;
  /** The provider's deadline, or the upstream's idle timeout, ran out. */
  protected timedOut = false;
  /** The upstream's response head arrived (and was written to the caller). */
  protected responding = false;
  protected status: number | null = null;
  private latency = -1;
  /**
   * The provider's clock: from the moment the last request byte was handed upstream (or the
   * response head, if the upstream answers first); the caller's time is never counted. -1: not started.
   */
  protected clockStart = -1;
  private deadline: NodeJS.Timeout | undefined;
  /**
   * The caller's clock: the longest pause between request-body chunks, armed while the call
   * waits for the caller's body and not while the upstream holds the body back. Undefined until
   * it is armed, at the end of the turn the call started in (`startBodyClock`).
   */
  protected bodyTimer: NodeJS.Timeout | undefined;
  /** The caller's whole body is in (or the call ended): its clock is not armed any more. */
  private bodyIn = false;
  private heldByUpstream = false;
  // The response body on its way to the caller.
  private remaining = -1;
  private held: Buffer | undefined;
  private observer: BodyObserver | undefined;

  constructor(
    private readonly counters: EngineCounters,
    protected readonly req: IncomingMessage,
    protected readonly res: ServerResponse,
    protected readonly target: ForwardTarget,
    private readonly done: ForwardDone,
    private readonly onHead: ResponseHeadHook | undefined,
  ) {}

  /** Stop the upstream side of the call, wherever it is. */
  protected abstract abortUpstream(): void;

  /** Count the call in flight and watch the caller's side: its response finishing, or the caller leaving. */
  protected begin(): void {
    this.counters.inFlight++;
    this.res.on('finish', this.onFinish);
    this.res.on('close', this.callerLeft);
    this.req.on('error', this.callerLeft);
  }

  // ---- the request body ----------------------------------------------------------------

  /**
   * Start the caller's clock (the request has a body to wait for). Its timer is armed at the end
   * of this event-loop turn, with those of the turn's other calls, and only if the body is not
   * all in by then: a small body arrives with the request head and is taken within the turn, so
   * the usual call never creates the timer. The clock starts that much later (less than one
   * turn, against a `clientBodyTimeoutMs` of seconds).
   */
  protected startBodyClock(): void {
    if (clocksToArm.length === 0) setImmediate(armBodyClocks);
    clocksToArm.push(this);
  }

  /** End of the turn: arm the caller's clock if the call still waits for its body. */
  armBodyClock(): void {
    if (this.finished || this.bodyIn) return;
    this.bodyTimer = setTimeout(this.onBodyStalled, this.counters.clientBodyTimeoutMs);
  }

  /** The caller's whole body is in: its clock stops (or is never armed). */
  protected stopBodyClock(): void {
    this.bodyIn = true;
    clearTimeout(this.bodyTimer);
  }

  /** The upstream takes no more of the body for now: the caller is paused, and the provider's clock runs. */
  protected upstreamFull(): void {
    this.req.pause();
    this.heldByUpstream = true;
    if (!this.responding) this.startDeadline();
  }

  /** The upstream takes the body again: the provider's clock stops, the caller's runs. */
  protected readonly upstreamWants = (): void => {
    if (this.finished) return;
    this.heldByUpstream = false;
    if (!this.responding) this.stopDeadline();
    this.bodyTimer?.refresh();
    this.req.resume();
  };

  /** The last request byte is upstream's now: the provider's clock starts. */
  protected bodySent(): void {
    if (this.clockStart < 0) this.clockStart = performance.now();
    if (!this.responding) this.restartDeadline();
  }

  private readonly onBodyStalled = (): void => {
    if (!this.heldByUpstream) this.failCaller('client_timeout');
  };

  // ---- the answer ----------------------------------------------------------------------

  /**
   * The upstream's response head: run the head hook and write the head to the caller; the
   * provider's deadline starts over as the idle timeout between body chunks (the engine
   * refreshes it with every chunk and stops it at the end of the body). False when the call
   * ended instead (a throwing hook is a 500; a head Node refuses to write, e.g. an invalid
   * status, is the upstream's fault). `declared` is the body's declared length (-1: none).
   */
  protected upstreamHead(status: number, headers: HeaderList, declared: number): boolean {
    this.responding = true;
    this.status = status;
    if (this.clockStart < 0) this.clockStart = performance.now();
    this.latency = this.providerMs();
    const head: ResponseHead = {
      status,
      headers,
      fromUpstream: true,
      networkError: null,
      callerFailure: null,
      upstreamLatencyMs: this.latency,
    };
    try {
      this.onHead?.(head);
    } catch (err) {
      this.internal(err);
      return false;
    }
    try {
      this.res.writeHead(status, headers);
    } catch (err) {
      this.responding = false;
      this.status = null;
      this.fail(networkErrorOf(err));
      return false;
    }
    this.remaining = declared;
    this.observer = head.body;
    // The deadline for the head is met: its timer goes on as the idle timeout between body chunks.
    this.restartDeadline();
    return true;
  }

  /**
   * A chunk of the answer, on to the caller as it arrives, except the last chunk of a body with
   * a declared length: it is written together with the end, once the body observer released it,
   * so a caller never holds a complete response before its outcome record is journaled. False
   * when the caller reads slower than the upstream sends.
   */
  protected passChunk(chunk: Buffer): boolean {
    this.observer?.chunk?.(chunk);
    if (this.remaining >= 0 && (this.remaining -= chunk.length) <= 0) {
      if (this.held === undefined) {
        this.held = chunk;
        return true;
      }
      this.res.write(this.held); // not reached with a conforming parser: the length ended at `held`
      this.held = undefined;
    }
    return this.res.write(chunk);
  }

  /** The upstream body ended: the caller's response ends once the body observer released it. */
  protected bodyEnded(): void {
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

  private readonly onFinish = (): void => {
    if (this.responding && this.claim()) this.report(null, this.status);
  };

  // ---- the caller leaving --------------------------------------------------------------

  /** The caller left: nobody is waiting for this call any more. */
  protected readonly callerLeft = (): void => {
    if (this.res.writableFinished || !this.claim()) return;
    this.abortUpstream();
    this.res.destroy();
    this.reportCaller('client_abort', this.res.headersSent ? this.status : null);
  };

  /** The caller's connection is gone (so an upstream error now is the caller leaving). */
  protected callerGone(): boolean {
    return this.req.socket.destroyed && !this.res.writableFinished;
  }

  // ---- ending the call -----------------------------------------------------------------

  private providerMs(): number {
    return this.clockStart < 0 ? 0 : Math.round(performance.now() - this.clockStart);
  }

  /**
   * Every path first claims the call's single result, then cleans up, then reports: cleanup
   * (aborting the upstream) fires events whose handlers then see the call as settled.
   */
  protected claim(): boolean {
    if (this.finished) return false;
    this.finished = true;
    this.counters.inFlight--;
    clearTimeout(this.deadline);
    clearTimeout(this.bodyTimer);
    return true;
  }

  protected report(networkError: ForwardFailure | null, sentStatus: number | null, internalError?: unknown): void {
    const result: ForwardResult = {
      status: this.status,
      sentStatus,
      networkError,
      upstreamLatencyMs: this.latency >= 0 ? this.latency : this.providerMs(),
    };
    if (internalError !== undefined) result.internalError = internalError;
    this.done(result);
  }

  /**
   * A failure of the caller's doing: the latency is what the provider spent, never the caller's
   * own stall or wait (its clock at the head if one came; 0 if it never had the whole request).
   */
  private reportCaller(kind: CallerFailure, sentStatus: number | null): void {
    if (this.latency < 0) this.latency = this.providerMs();
    this.report(kind, sentStatus);
  }

  // A fault of the gateway itself (a throwing hook, a request the library will not send): 500.
  private respondInternal(err: unknown): void {
    const sent = this.res.headersSent ? null : 500;
    if (sent !== null) sendProblem(this.res, 'svc_internal', 'the request could not be forwarded');
    else this.res.destroy();
    this.report(null, sent, err);
  }

  protected internal(err: unknown): void {
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
    if (
      !this.ownHead({
        status: sent,
        headers,
        fromUpstream: false,
        networkError: kind,
        callerFailure: null,
        upstreamLatencyMs: this.latency,
      })
    )
      return;
    sendNetworkFailure(res, kind, this.target.timeoutMs, headerListObject(headers) as Record<string, string>);
    this.report(kind, sent);
  }

  /**
   * The caller broke its own request (a body over the limit, or one that stalled): the
   * upstream request is stopped, the caller gets 413/408 and the connection is closed.
   */
  protected failCaller(kind: 'body_too_large' | 'client_timeout'): void {
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
    // The provider's clock, as for any answer: 0, since the upstream never had the whole request.
    if (this.latency < 0) this.latency = this.providerMs();
    const head: ResponseHead = {
      status: sent,
      headers,
      fromUpstream: false,
      networkError: null,
      callerFailure: kind,
      upstreamLatencyMs: this.latency,
    };
    if (!this.ownHead(head)) return;
    sendCallerFailure(
      res,
      kind,
      { clientBodyTimeoutMs: this.counters.clientBodyTimeoutMs, bodyLimitBytes: this.target.bodyLimitBytes },
      headerListObject(headers) as Record<string, string>,
    );
    this.reportCaller(kind, sent);
  }

  // ---- the provider's deadline ---------------------------------------------------------

  private readonly onDeadline = (): void => {
    this.timedOut = true;
    this.fail('timeout');
  };

  protected startDeadline(): void {
    if (this.deadline === undefined && !this.finished) this.deadline = setTimeout(this.onDeadline, this.target.timeoutMs);
  }

  /** Start the running deadline over (a sign of life from the upstream). */
  protected refreshDeadline(): void {
    this.deadline?.refresh();
  }

  /** Start the deadline over, on the timer the call already has if it has one. */
  private restartDeadline(): void {
    if (this.deadline === undefined) this.startDeadline();
    else this.deadline.refresh();
  }

  protected stopDeadline(): void {
    clearTimeout(this.deadline);
    this.deadline = undefined;
  }
}
