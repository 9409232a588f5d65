/**
 * The gateway's HTTP client for control's sync API (`/_sync/v1/…`, docs/design.md §4): the one place
 * that knows how a gateway reaches control. Every request carries the sync token as a bearer
 * token and goes through one keep-alive agent per client (http or https by the control URL).
 * The sync client opens the stream and posts acks with it, the outcome shipper posts batches.
 *
 * A gateway may know several controls on one database (`controlUrls`): `ControlEndpoints` holds
 * the list and which one is current, shared by every client of the gateway, so the stream, its
 * acks and the outcome batches all go to the same control. The sync client, which notices when
 * its control goes away, tells it so (`failed`); the next request of every client goes to the
 * next control in the list, wrapping around.
 */
import http from 'node:http';
import https from 'node:https';
import { urlToHttpOptions } from 'node:url';
import { CodedError, InvariantError } from '../../protocol/coded-error';
import type { Logger } from '../../runtime/log';

/** The controls a gateway may talk to, in the order to try them, and the one it talks to now. */
/** Control did not answer a request, or went silent on the sync stream, within the deadline; the message says which. */
export class ControlTimeoutError extends CodedError {
  override readonly code = 'SVC_ERR_CONTROL_TIMEOUT';
}

/** Control answered a gateway's request (an outcome batch, a budget request) with something else than 200 and the JSON expected. */
export class ControlAnswerError extends CodedError {
  override readonly code = 'SVC_ERR_CONTROL_ANSWER';

  constructor(
    message: string,
    /** The status control answered with. */
    readonly status: number,
  ) {
    super(message);
  }
}

export class ControlEndpoints {
  readonly urls: readonly string[];
  private index = 0;
  private readonly listeners: ((from: string, to: string) => void)[] = [];

  constructor(
    urls: readonly string[],
    private readonly log?: Logger,
  ) {
    if (urls.length === 0) throw new InvariantError('ControlEndpoints: no control URL');
    this.urls = [...urls];
  }

  /** The control every request goes to now. */
  get current(): string {
    return this.urls[this.index]!;
  }

  /**
   * The control at `url` went away (refused, reset, its stream ended or went silent, it
   * answered an error): if it is still the current one, the next in the list becomes current.
   * Several clients reporting the same failure move the choice once. One URL: nothing moves.
   */
  failed(url: string, reason: string | null): void {
    if (url !== this.current || this.urls.length === 1) return;
    const from = this.current;
    this.index = (this.index + 1) % this.urls.length;
    const to = this.current;
    this.log?.warn('moving to the next control', { from, to, reason });
    for (const listener of this.listeners) listener(from, to);
  }

  /** Call `listener` after every move. */
  onMove(listener: (from: string, to: string) => void): void {
    this.listeners.push(listener);
  }
}

export interface SyncHttpOptions {
  /** Control's admin + sync listener (`controlUrl`), or the gateway's controls, shared with its other clients. */
  controlUrl: string | ControlEndpoints;
  syncToken: string;
  /** Connections kept to control (to each control of the list). */
  maxSockets: number;
}

/** Control's answer to a POST: its status and its body as text. */
export interface SyncAnswer {
  status: number;
  text: string;
}

export class SyncHttp {
  /** Where requests go: the current control of the list. */
  readonly endpoints: ControlEndpoints;
  private readonly agents: { http?: http.Agent; https?: https.Agent } = {};
  private readonly maxSockets: number;
  private readonly authorization: string;
  /** Request options by control URL and path (see {@link target}). */
  private readonly targets = new Map<string, { transport: typeof http | typeof https; agent: http.Agent; host: http.RequestOptions }>();

  constructor(opts: SyncHttpOptions) {
    this.endpoints = typeof opts.controlUrl === 'string' ? new ControlEndpoints([opts.controlUrl]) : opts.controlUrl;
    this.maxSockets = opts.maxSockets;
    this.authorization = `Bearer ${opts.syncToken}`;
  }

  /** `path` (with any query) on the current control. */
  url(path: string): URL {
    return new URL(path, this.endpoints.current);
  }

  /** The transport and keep-alive agent for `url` (http or https), the agent made on first use. */
  private via(url: URL): { transport: typeof http | typeof https; agent: http.Agent } {
    if (url.protocol === 'https:')
      return { transport: https, agent: (this.agents.https ??= new https.Agent({ keepAlive: true, maxSockets: this.maxSockets })) };
    return { transport: http, agent: (this.agents.http ??= new http.Agent({ keepAlive: true, maxSockets: this.maxSockets })) };
  }

  /**
   * Where a POST to `path` goes on the current control, as request options: worked out once
   * per control and path (acks go to one path on every change), not parsed anew each time.
   */
  private target(path: string): { transport: typeof http | typeof https; agent: http.Agent; host: http.RequestOptions } {
    const key = `${this.endpoints.current} ${path}`;
    let target = this.targets.get(key);
    if (target === undefined) {
      const url = this.url(path);
      target = { ...this.via(url), host: urlToHttpOptions(url) };
      this.targets.set(key, target);
    }
    return target;
  }

  /** GET `url` (from {@link url}) as a newline-delimited JSON stream; the caller reads the response. */
  stream(url: URL): http.ClientRequest {
    const { transport, agent } = this.via(url);
    return transport.get(url, { agent, headers: { authorization: this.authorization, accept: 'application/x-ndjson' } });
  }

  /**
   * POST a JSON document to `path` on the current control. Resolves with control's answer
   * whatever its status; rejects on a network error, when control has not answered within
   * `timeoutMs`, or when `signal` aborts.
   */
  post(path: string, json: string | Buffer, timeoutMs?: number, signal?: AbortSignal): Promise<SyncAnswer> {
    const { transport, agent, host } = this.target(path);
    return new Promise((resolve, reject) => {
      const req = transport.request({
        ...host,
        method: 'POST',
        agent,
        ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
        ...(signal !== undefined ? { signal } : {}),
        headers: { authorization: this.authorization, 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) },
      });
      req.on('timeout', () => req.destroy(new ControlTimeoutError(`control did not answer within ${timeoutMs! / 1000} s`)));
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      });
      req.end(json);
    });
  }

  /** Close every connection (at stop). */
  close(): void {
    this.agents.http?.destroy();
    this.agents.https?.destroy();
  }
}
