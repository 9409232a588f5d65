/**
 * The gateway's HTTP client for control's sync API (`/_sync/v1/…`, DESIGN §4): the one place
 * that knows how a gateway reaches control. Every request carries the sync token as a bearer
 * token and goes through one keep-alive agent per client (http or https by the control URL).
 * The sync client opens the stream and posts acks with it, the outcome shipper posts batches.
 */
import http from 'node:http';
import https from 'node:https';

export interface SyncHttpOptions {
  /** Control's admin + sync listener (`controlUrl`). */
  controlUrl: string;
  syncToken: string;
  /** Connections kept to control. */
  maxSockets: number;
}

/** Control's answer to a POST: its status and its body as text. */
export interface SyncAnswer {
  status: number;
  text: string;
}

export class SyncHttp {
  /** Control's URL; request paths resolve against it. */
  readonly base: URL;
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;
  private readonly authorization: string;

  constructor(opts: SyncHttpOptions) {
    this.base = new URL(opts.controlUrl);
    const tls = this.base.protocol === 'https:';
    this.transport = tls ? https : http;
    this.agent = new (tls ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: opts.maxSockets });
    this.authorization = `Bearer ${opts.syncToken}`;
  }

  /** `path` (with any query) on control. */
  url(path: string): URL {
    return new URL(path, this.base);
  }

  /** GET `url` (from {@link url}) as a newline-delimited JSON stream; the caller reads the response. */
  stream(url: URL): http.ClientRequest {
    return this.transport.get(url, { agent: this.agent, headers: { authorization: this.authorization, accept: 'application/x-ndjson' } });
  }

  /**
   * POST a JSON document to `path`. Resolves with control's answer whatever its status;
   * rejects on a network error, or when control has not answered within `timeoutMs`.
   */
  post(path: string, json: string | Buffer, timeoutMs?: number): Promise<SyncAnswer> {
    return new Promise((resolve, reject) => {
      const req = this.transport.request(this.url(path), {
        method: 'POST',
        agent: this.agent,
        ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
        headers: { authorization: this.authorization, 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) },
      });
      req.on('timeout', () => req.destroy(new Error(`control did not answer within ${timeoutMs! / 1000} s`)));
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
    this.agent.destroy();
  }
}
