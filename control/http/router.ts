/**
 * A small method + path router for control's listeners. Patterns are literal segments and
 * `:name` parameters; a path that matches with another method answers 405 with `Allow`.
 * Handlers throw `SvcError` for problems; the router sends them as problem+json.
 *
 * Two request rules hold on every route of every control listener, before its handler runs:
 *
 * - the path is matched as sent: a dot segment (`.`, `..`, or any spelling of them with
 *   `%2e`) is 400 `svc_bad_request`, never resolved against the segments before it;
 * - each query parameter a route reads may appear once (400 naming it otherwise), and a JSON
 *   route refuses parameters it does not read (400 naming them), so a misspelt filter never
 *   silently answers everything. HTML pages, feeds and the metrics scrape ignore parameters
 *   they do not read: links people share carry tracking parameters (`utm_source`, `fbclid`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SvcError, type FieldError } from '../../protocol/errors';
import { sendError } from '../../runtime/http';
import { redactKeys } from '../../protocol/keys';
import type { Logger } from '../../runtime/log';

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
  /** Who is calling (the operator's name on the admin API), set by the listener's auth step; the audit's actor. */
  actor: string;
  /** The id of the token the caller presented (`opt_…`, `root`), the audit's `token_id`; null where none is recorded. */
  tokenId: string | null;
  /** The scopes the caller holds, where its listener has scopes (the admin API); empty elsewhere. */
  scopes: ReadonlySet<string>;
}

/** The scopes of a caller on a listener without scopes (the public API, the indexer). */
export const NO_SCOPES: ReadonlySet<string> = new Set();

/** What a listener's auth step answers: who is calling, as {@link RequestContext} carries it. */
export interface Caller {
  actor: string;
  tokenId: string | null;
  scopes?: ReadonlySet<string>;
}

/** The route a request matched: its method (GET for a HEAD) and `/a/:param` pattern. */
export interface MatchedRoute {
  method: string;
  pattern: string;
}

export type Handler = (ctx: RequestContext) => Promise<void> | void;

export interface RouteOptions {
  /** The query parameters the route reads; each may appear at most once. @default none */
  query?: readonly string[];
  /**
   * What the route does with any other query parameter: `refuse` (400 `svc_bad_request`
   * naming it) for JSON routes, `ignore` for HTML pages, feeds and the metrics scrape.
   * @default 'refuse'
   */
  otherQuery?: 'refuse' | 'ignore';
}

interface Route {
  method: string;
  segments: string[];
  handler: Handler;
  query: readonly string[];
  otherQuery: 'refuse' | 'ignore';
}

/** One row of {@link Router.table}. */
export interface RouteEntry {
  method: string;
  /** `/a/:param` */
  pattern: string;
  query: readonly string[];
  otherQuery: 'refuse' | 'ignore';
}

/** A route's handler, after its options when it has any: `get('/x', handler)`, `get('/x', { query: ['limit'] }, handler)`. */
export type RouteArgs = [handler: Handler] | [options: RouteOptions, handler: Handler];

export class Router {
  private readonly routes: Route[] = [];

  /** Register a route; the handler it is stored as checks the query against its options first. */
  add(method: string, pattern: string, ...args: RouteArgs): this {
    const [options, handler] = args.length === 1 ? [{}, args[0]] : args;
    const query = options.query ?? [];
    const otherQuery = options.otherQuery ?? 'refuse';
    const checked: Handler = (ctx) => {
      checkQuery(ctx, query, otherQuery);
      return handler(ctx);
    };
    this.routes.push({ method, segments: pattern.split('/').filter(Boolean), handler: checked, query, otherQuery });
    return this;
  }

  get(pattern: string, ...args: RouteArgs): this {
    return this.add('GET', pattern, ...args);
  }
  post(pattern: string, ...args: RouteArgs): this {
    return this.add('POST', pattern, ...args);
  }
  put(pattern: string, ...args: RouteArgs): this {
    return this.add('PUT', pattern, ...args);
  }
  patch(pattern: string, ...args: RouteArgs): this {
    return this.add('PATCH', pattern, ...args);
  }
  delete(pattern: string, ...args: RouteArgs): this {
    return this.add('DELETE', pattern, ...args);
  }

  /** Every registered route (method, `/a/:param` pattern and its query rule), in registration order. */
  table(): RouteEntry[] {
    return this.routes.map((r) => ({ method: r.method, pattern: '/' + r.segments.join('/'), query: r.query, otherQuery: r.otherQuery }));
  }

  /**
   * Find the handler for a request path as it was sent (not resolved or normalised); throws
   * 400 for malformed percent-encoding and dot segments, 404/405 `SvcError`s for no route.
   */
  match(method: string, pathname: string): { handler: Handler; params: Record<string, string>; route: MatchedRoute } {
    let parts: string[];
    try {
      parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      throw new SvcError('svc_bad_request', 'malformed percent-encoding in path');
    }
    if (parts.some((part) => part === '.' || part === '..')) {
      throw new SvcError('svc_bad_request', 'a path segment is . or .. (or %2e for a dot): paths are taken as sent, never resolved');
    }
    const allowed: string[] = [];
    for (const route of this.routes) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
        return { handler: route.handler, params, route: { method: route.method, pattern: '/' + route.segments.join('/') } };
      }
      allowed.push(route.method);
    }
    if (allowed.length > 0) {
      throw new SvcError('svc_method_not_allowed', `${method} is not allowed here`, {
        headers: { allow: [...new Set(allowed)].join(', ') },
      });
    }
    throw new SvcError('svc_not_found', `no route for ${method} ${pathname}`);
  }
}

/**
 * The query rule of one route: a parameter it reads given twice, or (unless `other` is
 * `ignore`) one it does not read, is 400 `svc_bad_request` with each named in `errors`.
 */
function checkQuery(ctx: RequestContext, names: readonly string[], other: 'refuse' | 'ignore'): void {
  if (ctx.query.size === 0) return;
  const seen = new Set<string>();
  const errors = new Map<string, FieldError>();
  for (const name of ctx.query.keys()) {
    if (!names.includes(name)) {
      if (other === 'refuse') errors.set(name, { field: redactKeys(name), message: 'is not a known parameter' });
    } else if (seen.has(name)) {
      errors.set(name, { field: name, message: 'is given more than once' });
    } else {
      seen.add(name);
    }
  }
  if (errors.size === 0) return;
  const list = [...errors.values()];
  ctx.req.resume();
  throw new SvcError('svc_bad_request', list.map((e) => `${e.field}: ${e.message}`).join('; '), { extra: { errors: list } });
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const seg = pattern[i]!;
    if (seg.startsWith(':')) params[seg.slice(1)] = parts[i]!;
    else if (seg !== parts[i]) return null;
  }
  return params;
}

/**
 * Log a request's failure: an unexpected one as an error (its answer is a 500 without
 * details), a coded 5xx (the store unavailable) as a warning with what its answer says.
 */
export function logFailure(log: Logger, method: string | undefined, err: unknown): void {
  if (!(err instanceof SvcError)) log.error('request failed', { method, err });
  else if (err.status >= 500) log.warn('request failed', { method, code: err.code, detail: err.message });
}

/** Run a handler, turning thrown errors into problem+json and logging the unexpected ones. */
export async function runHandler(handler: Handler, ctx: RequestContext, log: Logger): Promise<void> {
  try {
    await handler(ctx);
  } catch (err) {
    logFailure(log, ctx.req.method, err);
    sendError(ctx.res, err);
  }
}
