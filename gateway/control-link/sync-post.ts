/**
 * Small JSON POSTs to control's sync API (the gateway's acks, nacks and lease renewals) on
 * kept-alive connections, written and read by hand rather than through node's HTTP client: the
 * gateway acks every change, and a `ClientRequest` with its agent bookkeeping and its
 * `IncomingMessage` cost a few hundred µs of CPU for a request of two hundred bytes, several
 * times what the write and the read cost.
 *
 * HTTP/1.1 (or HTTPS, by the control URL) to the current control of the shared
 * `ControlEndpoints` (new connections when that changes), one request at a time on each of up
 * to `maxConnections` connections, as node's agent would; the others wait in order (connections
 * still waiting on a control left behind do not count: `open`). The answer's status is returned
 * and its body read and dropped, whether it is sized by `Content-Length`, chunked or ended by
 * the close. A connection is closed before the server's announced keep-alive timeout runs out,
 * and a request that fails on a reused connection before any answer came (the server closed it
 * meanwhile) is sent once more on a new one: an ack is idempotent.
 *
 * A hung control (alive, not answering) must not hold the connections nor let requests pile
 * up behind them:
 * - Every request written gets a complete answer within `responseTimeoutMs` (6 s) or fails
 *   with `SVC_ERR_SYNC_POST_TIMEOUT`, its connection destroyed. 6 s is the gateway's other
 *   deadline on control: the sync stream's answer, and its silence, are 3 beats of 2 s
 *   (gateway/state/sync-client.ts `ANSWER_LIMIT_MS`); an ack's answer is a commit of one turn's
 *   acks, well under it on a control that works. It is not sent again: what is left to say
 *   goes with the next ack, or with the version announced on the reconnect.
 * - Waiting requests are keyed (the path, or the caller's `key`): a newer request with the key
 *   of one still waiting takes its place in line and carries both callers, who get its answer
 *   (acks are idempotent and grow in version, so the newer covers the older). At most
 *   `maxQueued` (64) keys wait; past that a request is refused at once with
 *   `SVC_ERR_SYNC_POST_QUEUE_FULL`. Both are counted in `stats`.
 * A lost ack is harmless: the gateway announces the version it holds whenever it reconnects.
 *
 * undici's `Pool` was measured in this client's place (`request` with `body.text()`, and
 * `dispatch` with a handler that drops the body): 19–36 % more gateway CPU per change, and
 * again with the timeout and the keyed queue in place (bench/ack-client.js; docs/scaling.md),
 * so the acks stay on this client.
 */
import net from 'node:net';
import tls from 'node:tls';
import { CodedError } from '../../protocol/coded-error';
import type { ControlEndpoints } from './sync-http';

/** No complete answer within the response timeout: the request failed, its connection destroyed. */
export class SyncPostTimeoutError extends CodedError {
  override readonly code = 'SVC_ERR_SYNC_POST_TIMEOUT';
  constructor(readonly timeoutMs: number) {
    super(`control did not answer within ${timeoutMs / 1000} s`);
  }
}

/** `maxQueued` requests wait already: this one was refused without being sent. */
export class SyncPostQueueFullError extends CodedError {
  override readonly code = 'SVC_ERR_SYNC_POST_QUEUE_FULL';
  constructor(readonly maxQueued: number) {
    super(`${maxQueued} sync requests wait already`);
  }
}

/** Control's answer is not one this client reads, or the connection closed before it was whole. */
export class SyncPostAnswerError extends CodedError {
  override readonly code = 'SVC_ERR_SYNC_POST_ANSWER';
}

/** The client was closed: the request was dropped, on the wire or waiting, or came after. */
export class SyncPostClosedError extends CodedError {
  override readonly code = 'SVC_ERR_SYNC_POST_CLOSED';
  constructor() {
    super('sync client closed');
  }
}

export interface SyncPosterOptions {
  /** Connections to one control. @default 4 */
  maxConnections?: number;
  /** A request written without a complete answer this long after fails and its connection is destroyed. @default 6 s */
  responseTimeoutMs?: number;
  /** Keys waiting for a connection, at most; past it a request is refused. @default 64 */
  maxQueued?: number;
  /** The certificates an https control's must chain to, in place of node's (the gateway passes none: node's, with `NODE_EXTRA_CA_CERTS`). */
  ca?: string | Buffer;
}

/** What `SyncPoster` counted since it was made. */
export interface SyncPostStats {
  /** Waiting requests replaced by a newer one with their key. */
  superseded: number;
  /** Requests refused at `maxQueued`. */
  refused: number;
  /** Requests failed at the response timeout. */
  timedOut: number;
}

/** The sync stream's answer deadline: 3 beats of 2 s (gateway/state/sync-client.ts `ANSWER_LIMIT_MS`). */
export const SYNC_POST_TIMEOUT_MS = 6_000;
/** Keys that may wait for a connection. The gateway uses three (ack, nack, renewal). */
export const SYNC_POST_MAX_QUEUED = 64;

interface Caller {
  resolve: (status: number) => void;
  reject: (err: Error) => void;
}

interface Pending extends Caller {
  key: string;
  path: string;
  body: string;
  /** The callers of waiting requests this one replaced: they get its answer. */
  superseded: Caller[] | null;
  /** Sent once already, on a reused connection that failed before answering. */
  retried: boolean;
}

function settle(req: Pending, status: number | null, err: Error | null): void {
  if (err === null) req.resolve(status!);
  else req.reject(err);
  if (req.superseded !== null)
    for (const c of req.superseded) {
      if (err === null) c.resolve(status!);
      else c.reject(err);
    }
}

/** How the answer's body ends. */
type BodyEnd = { length: number } | { chunked: true } | { close: true };

interface Head {
  status: number;
  end: BodyEnd;
  /** The connection may carry the next request. */
  keepAlive: boolean;
  /** The server's announced keep-alive timeout, if any. */
  idleMs: number | null;
}

/** Close an idle connection this long before the server's announced keep-alive timeout. @default 1 s */
const IDLE_MARGIN_MS = 1_000;
/** Largest answer head read. @default 64 KiB */
const MAX_HEAD_BYTES = 64 * 1024;

export class SyncPoster {
  private readonly queue: Pending[] = [];
  /** The waiting requests by key. */
  private readonly waiting = new Map<string, Pending>();
  private readonly connections = new Set<PostConnection>();
  private readonly targets = new Map<string, Target>();
  private readonly maxConnections: number;
  private readonly responseTimeoutMs: number;
  private readonly maxQueued: number;
  private readonly ca: string | Buffer | undefined;
  private closed = false;
  readonly stats: SyncPostStats = { superseded: 0, refused: 0, timedOut: 0 };

  constructor(
    private readonly endpoints: ControlEndpoints,
    private readonly authorization: string,
    options: SyncPosterOptions = {},
  ) {
    this.maxConnections = options.maxConnections ?? 4;
    this.responseTimeoutMs = options.responseTimeoutMs ?? SYNC_POST_TIMEOUT_MS;
    this.maxQueued = options.maxQueued ?? SYNC_POST_MAX_QUEUED;
    this.ca = options.ca;
  }

  /**
   * POST `json` to `path` on the current control; resolves with the answer's status. A request
   * still waiting with the same `key` is replaced by this one, its caller answered with this
   * one's answer: give one key only to requests of which the newer covers the older. Rejects
   * with a network error, or a coded error (`SVC_ERR_SYNC_POST_…`).
   */
  post(path: string, json: string, key: string = path): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      if (this.closed) return reject(new SyncPostClosedError());
      const older = this.waiting.get(key);
      if (older !== undefined) {
        // The newer request takes the older's place in line; the older's caller waits on it.
        (older.superseded ??= []).push({ resolve: older.resolve, reject: older.reject });
        older.resolve = resolve;
        older.reject = reject;
        older.path = path;
        older.body = json;
        this.stats.superseded++;
        return;
      }
      if (this.waiting.size >= this.maxQueued) {
        this.stats.refused++;
        return reject(new SyncPostQueueFullError(this.maxQueued));
      }
      const req: Pending = { key, path, body: json, resolve, reject, superseded: null, retried: false };
      this.queue.push(req);
      this.waiting.set(key, req);
      this.next();
    });
  }

  /** Close every connection, failing the requests on them and those waiting, and any posted after. */
  close(): void {
    this.closed = true;
    const err = new SyncPostClosedError();
    for (const c of this.connections) c.close(err);
    this.connections.clear();
    this.waiting.clear();
    for (const r of this.queue.splice(0)) settle(r, null, err);
  }

  /** Send what waits on idle connections to the current control, opening new ones up to the limit. */
  private next(): void {
    const base = this.endpoints.current;
    for (const c of this.connections) {
      if (c.base !== base) {
        // The requests on the wire to the old control finish there; the connection goes after.
        c.retire();
        if (c.closed) this.connections.delete(c);
      }
    }
    while (this.queue.length > 0) {
      let conn: PostConnection | null = null;
      for (const c of this.connections) if (c.base === base && c.idle) conn = c;
      if (conn === null) {
        if (this.open(base) >= this.maxConnections) return;
        conn = new PostConnection(this.target(this.queue[0]!.path, base), this.responseTimeoutMs, (c, again, timedOut) =>
          this.done(c, again, timedOut),
        );
        this.connections.add(conn);
      }
      const req = this.queue.shift()!;
      this.waiting.delete(req.key);
      conn.send(req, this.target(req.path, base));
    }
  }

  /**
   * Open connections to `base`. Those to a control left behind are not counted: one that hangs
   * never answers what is on them, and they must not keep the next control's requests waiting.
   */
  private open(base: string): number {
    let n = 0;
    for (const c of this.connections) if (!c.closed && c.base === base) n++;
    return n;
  }

  /**
   * A connection finished a request (or closed): a request to send again goes first in line,
   * unless a newer one with its key waits already (that one answers both).
   */
  private done(conn: PostConnection, again: Pending | null, timedOut: boolean): void {
    if (conn.closed) this.connections.delete(conn);
    if (timedOut) this.stats.timedOut++;
    if (again !== null) {
      const newer = this.waiting.get(again.key);
      if (newer !== undefined) {
        (newer.superseded ??= []).push(again, ...(again.superseded ?? []));
        this.stats.superseded++;
      } else if (!this.closed) {
        this.queue.unshift(again);
        this.waiting.set(again.key, again);
      } else settle(again, null, new SyncPostClosedError());
    }
    if (!this.closed) this.next();
  }

  /** Where `path` goes on `base` and the request's head up to its Content-Length value, made once per control and path. */
  private target(path: string, base: string): Target {
    const key = `${base} ${path}`;
    let target = this.targets.get(key);
    if (target === undefined) {
      const url = new URL(path, base);
      const head =
        `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: ${this.authorization}\r\n` +
        'Content-Type: application/json\r\nConnection: keep-alive\r\nContent-Length: ';
      target = { base, url, head, ca: this.ca };
      this.targets.set(key, target);
    }
    return target;
  }
}

interface Target {
  base: string;
  url: URL;
  head: string;
  ca: string | Buffer | undefined;
}

/** One kept-alive connection to one control, carrying one request at a time. */
class PostConnection {
  readonly base: string;
  private socket: net.Socket | null;
  /** The request on the wire, if any. */
  private current: Pending | null = null;
  /** What came back for it so far, past its head once that is parsed (latin1: the head is ASCII, the body is dropped). */
  private received = '';
  /** The answer's head, once it is all in. */
  private head: Head | null = null;
  /** The connection carried an answer before: a failure on it may be the server's idle close. */
  private reused = false;
  private retiring = false;
  private idleTimer: NodeJS.Timeout | null = null;
  /** Fails the request on the wire at the response timeout. */
  private answerTimer: NodeJS.Timeout | null = null;

  constructor(
    target: Target,
    private readonly timeoutMs: number,
    private readonly onDone: (conn: PostConnection, again: Pending | null, timedOut: boolean) => void,
  ) {
    this.base = target.base;
    const { url } = target;
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const socket =
      url.protocol === 'https:'
        ? tls.connect({
            host,
            port,
            servername: net.isIP(host) === 0 ? host : undefined,
            ...(target.ca !== undefined ? { ca: target.ca } : {}),
          })
        : net.connect({ host, port });
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1_000);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', (err: Error) => this.onClosed(err));
    socket.on('close', () => this.onClosed(new SyncPostAnswerError('control closed the connection before answering')));
    this.socket = socket;
  }

  get idle(): boolean {
    return this.socket !== null && this.current === null && !this.retiring;
  }

  get closed(): boolean {
    return this.socket === null;
  }

  send(req: Pending, target: Target): void {
    this.current = req;
    this.received = '';
    this.head = null;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.answerTimer = setTimeout(() => this.fail(new SyncPostTimeoutError(this.timeoutMs), true), this.timeoutMs);
    this.answerTimer.unref();
    this.socket!.write(`${target.head}${Buffer.byteLength(req.body)}\r\n\r\n${req.body}`);
  }

  /** Close once the request on the wire (if any) is answered. */
  retire(): void {
    this.retiring = true;
    if (this.current === null) this.drop();
  }

  /** Close now, failing the request on the wire with `err`. */
  close(err: Error): void {
    const req = this.current;
    this.current = null;
    this.drop();
    if (req !== null) settle(req, null, err);
  }

  private onData(chunk: string): void {
    if (this.current === null) {
      // Nothing was asked: the connection is out of step.
      this.drop();
      this.onDone(this, null, false);
      return;
    }
    this.received += chunk;
    let rest: string | null;
    try {
      this.head ??= this.parseHead();
      if (this.head === null) return;
      rest = this.bodyDone(this.head.end);
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    if (rest === null) return;
    if (rest.length > 0) this.fail(new SyncPostAnswerError('control sent more than its answer'));
    else this.answered(this.head.status, this.head.keepAlive, this.head.idleMs);
  }

  /** The answer's head once it is all in (1xx heads skipped), leaving `received` holding the body; null until then. */
  private parseHead(): Head | null {
    for (;;) {
      const at = this.received.indexOf('\r\n\r\n');
      if (at === -1) {
        if (this.received.length > MAX_HEAD_BYTES) throw new SyncPostAnswerError('control sent an answer head over 64 KiB');
        return null;
      }
      const lines = this.received.slice(0, at).split('\r\n');
      const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0]!);
      if (!statusLine) throw new SyncPostAnswerError('control sent something that is not an HTTP/1.1 answer');
      const status = Number(statusLine[2]);
      this.received = this.received.slice(at + 4);
      if (status < 200) continue;
      const headers = new Map<string, string>();
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
      }
      const connection = headers.get('connection') ?? '';
      const keepAlive = statusLine[1] === '1' ? !/\bclose\b/i.test(connection) : /\bkeep-alive\b/i.test(connection);
      const timeout = /\btimeout=(\d+)/i.exec(headers.get('keep-alive') ?? '');
      const lengthText = headers.get('content-length');
      const length = lengthText === undefined ? null : Number(lengthText);
      if (length !== null && !(/^\d+$/.test(lengthText!) && Number.isSafeInteger(length)))
        throw new SyncPostAnswerError('control sent a bad Content-Length');
      let end: BodyEnd;
      if (/\bchunked\s*$/i.test(headers.get('transfer-encoding') ?? '')) end = { chunked: true };
      else if (length !== null) end = { length };
      else if (status === 204 || status === 304) end = { length: 0 };
      else end = { close: true };
      return { status, end, keepAlive: keepAlive && !('close' in end), idleMs: timeout ? Number(timeout[1]) * 1000 : null };
    }
  }

  /** What follows the body once it is all in; null until then (or until the close, for a body ended by it). */
  private bodyDone(end: BodyEnd): string | null {
    if ('close' in end) return null;
    if ('length' in end) return this.received.length >= end.length ? this.received.slice(end.length) : null;
    let at = 0;
    for (;;) {
      const eol = this.received.indexOf('\r\n', at);
      if (eol === -1) return null;
      const size = parseInt(this.received.slice(at, eol), 16);
      if (!Number.isSafeInteger(size) || size < 0) throw new SyncPostAnswerError('control sent a bad chunk size');
      if (size === 0) {
        // Trailers, if any, end with an empty line.
        const trailersEnd = this.received.indexOf('\r\n\r\n', eol);
        if (this.received.startsWith('\r\n', eol + 2)) return this.received.slice(eol + 4);
        return trailersEnd === -1 ? null : this.received.slice(trailersEnd + 4);
      }
      if (this.received.length < eol + 2 + size + 2) return null;
      at = eol + 2 + size + 2;
    }
  }

  private answered(status: number, keepAlive: boolean, idleMs: number | null): void {
    const req = this.current!;
    this.current = null;
    this.clearAnswerTimer();
    this.head = null;
    this.received = '';
    this.reused = true;
    if (!keepAlive || this.retiring) this.drop();
    else if (idleMs !== null) {
      this.idleTimer = setTimeout(
        () => {
          this.drop();
          this.onDone(this, null, false);
        },
        Math.max(0, idleMs - IDLE_MARGIN_MS),
      );
      this.idleTimer.unref();
    }
    settle(req, status, null);
    this.onDone(this, null, false);
  }

  /** The connection errored or closed: an answer ended by the close is complete; otherwise the request fails or, once, goes again. */
  private onClosed(err: Error): void {
    if (this.socket === null) return;
    const req = this.current;
    if (req !== null && this.head !== null && 'close' in this.head.end) {
      // An answer whose body the close ends.
      this.answered(this.head.status, false, null);
      return;
    }
    if (req !== null && this.reused && this.head === null && this.received === '' && !req.retried) {
      req.retried = true;
      this.current = null;
      this.drop();
      this.onDone(this, req, false);
      return;
    }
    this.fail(err);
  }

  /** Fail the request on the wire and drop the connection. */
  private fail(err: Error, timedOut = false): void {
    const req = this.current;
    this.current = null;
    this.drop();
    if (req !== null) settle(req, null, err);
    this.onDone(this, null, timedOut);
  }

  private clearAnswerTimer(): void {
    if (this.answerTimer !== null) clearTimeout(this.answerTimer);
    this.answerTimer = null;
  }

  private drop(): void {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.clearAnswerTimer();
    const socket = this.socket;
    this.socket = null;
    socket?.destroy();
  }
}
