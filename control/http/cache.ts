/**
 * Cached answers for the public read API and the indexer (docs/design.md §7). Each answer is built
 * at most once per TTL (node-cache), kept as the exact bytes sent with a strong `ETag`, and
 * served with `Cache-Control: public, max-age=<seconds left>` (`private`, with `Vary:
 * Authorization`, for a cache of one caller's answers, keyed by who asks); `If-None-Match` that
 * names the current ETag gets `304 Not Modified` without a body.
 *
 * Expiry is checked against the injected clock as well as node-cache's own timer, so a test
 * that moves `ctx.now` past the TTL sees a fresh answer.
 *
 * @see RFC 9111 §5.2.2.9 (max-age) · RFC 9110 §8.8.3 (ETag) and §13.1.2 (If-None-Match)
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import NodeCache from 'node-cache';
import type { Settled } from '../../runtime/http';

/** Most distinct answers kept per cache (e.g. activity pages by cursor). @default 10000 */
export const DEFAULT_CACHE_MAX_KEYS = 10_000;

export interface Rendered {
  body: Buffer;
  contentType: string;
  /** Extra response headers (e.g. a Content-Security-Policy for HTML). */
  headers?: Record<string, string>;
}

interface Entry extends Rendered {
  etag: string;
  expiresAt: number;
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Render a value as a JSON answer. */
export function jsonAnswer<T>(value: Settled<T>, headers?: Record<string, string>): Rendered {
  return { body: Buffer.from(JSON.stringify(value)), contentType: JSON_CONTENT_TYPE, ...(headers ? { headers } : {}) };
}

/** True when an `If-None-Match` header value names `etag` (weak comparison, RFC 9110 §13.1.2). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const bare = etag.replace(/^W\//, '');
  for (const candidate of header.split(',')) {
    const c = candidate.trim();
    if (c === '*' || c.replace(/^W\//, '') === bare) return true;
  }
  return false;
}

export class ResponseCache {
  private readonly cache: NodeCache;
  private readonly ttlS: number;
  private readonly now: () => number;
  /** `public` for everyone's reads; `private` for one caller's (its key in the cache key), with `Vary: Authorization`. */
  private readonly scope: 'public' | 'private';
  /** Builds in progress, by key. */
  private readonly building = new Map<string, Promise<Entry>>();

  constructor(options: { ttlS: number; now: () => number; maxKeys?: number; scope?: 'public' | 'private' }) {
    this.ttlS = options.ttlS;
    this.now = options.now;
    this.scope = options.scope ?? 'public';
    this.cache = new NodeCache({
      stdTTL: options.ttlS,
      checkperiod: Math.max(1, options.ttlS * 2),
      useClones: false,
      deleteOnExpire: true,
      maxKeys: options.maxKeys ?? DEFAULT_CACHE_MAX_KEYS,
    });
  }

  /**
   * The cached answer for `key`, building and storing it when missing or expired. Callers that
   * miss while a build of the same key runs share that build.
   */
  get(key: string, build: () => Rendered | Promise<Rendered>): Promise<Entry> {
    const now = this.now();
    const hit = this.cache.get<Entry>(key);
    if (hit !== undefined && hit.expiresAt > now) return Promise.resolve(hit);
    let building = this.building.get(key);
    if (building === undefined) {
      building = this.build(key, build, now).finally(() => this.building.delete(key));
      this.building.set(key, building);
    }
    return building;
  }

  private async build(key: string, build: () => Rendered | Promise<Rendered>, now: number): Promise<Entry> {
    const rendered = await build();
    const entry: Entry = {
      ...rendered,
      etag: `"${createHash('sha256').update(rendered.body).digest('base64url').slice(0, 27)}"`,
      expiresAt: now + this.ttlS * 1000,
    };
    try {
      this.cache.set(key, entry);
    } catch {
      // ECACHEFULL: answer uncached rather than grow without bound.
    }
    return entry;
  }

  /** Send the cached answer for `key` (or 304 when the client already holds it). */
  async send(req: IncomingMessage, res: ServerResponse, key: string, build: () => Rendered | Promise<Rendered>): Promise<void> {
    const entry = await this.get(key, build);
    const maxAge = Math.max(0, Math.ceil((entry.expiresAt - this.now()) / 1000));
    const headers: Record<string, string> = {
      'cache-control': `${this.scope}, max-age=${maxAge}`,
      etag: entry.etag,
      ...entry.headers,
    };
    if (this.scope === 'private') headers.vary = 'Authorization';
    if (etagMatches(req.headers['if-none-match'], entry.etag)) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    headers['content-type'] = entry.contentType;
    headers['content-length'] = String(entry.body.length);
    res.writeHead(200, headers);
    res.end(entry.body);
  }

  /** Drop every cached answer. */
  flush(): void {
    this.cache.flushAll();
  }

  close(): void {
    this.cache.close();
  }
}

/**
 * One value (not an answer) read at most once per TTL on the injected clock, misses during a
 * read sharing it: what a cached answer's key depends on, so a request answered from the cache
 * reads nothing from the store.
 */
export class CachedValue<T> {
  private held: { value: T; expiresAt: number } | null = null;
  private reading: Promise<T> | null = null;

  constructor(
    private readonly ttlS: number,
    private readonly now: () => number,
    private readonly read: () => Promise<T>,
  ) {}

  get(): Promise<T> {
    const now = this.now();
    if (this.held !== null && this.held.expiresAt > now) return Promise.resolve(this.held.value);
    this.reading ??= this.read()
      .then((value) => {
        this.held = { value, expiresAt: now + this.ttlS * 1000 };
        return value;
      })
      .finally(() => (this.reading = null));
    return this.reading;
  }
}
