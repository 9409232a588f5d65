/**
 * A small method + path router for control's listeners. Patterns are literal segments and
 * `:name` parameters; a path that matches with another method answers 405 with `Allow`.
 * Handlers throw `SvcError` for problems; the router sends them as problem+json.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SvcError } from '../../protocol/errors';
import { sendError } from '../../protocol/http';
import type { Logger } from '../../protocol/log';

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
  /** Who is calling (admin token name), set by the listener's auth step. */
  actor: string;
}

export type Handler = (ctx: RequestContext) => Promise<void> | void;

interface Route {
  method: string;
  segments: string[];
  handler: Handler;
}

export class Router {
  private readonly routes: Route[] = [];

  add(method: string, pattern: string, handler: Handler): this {
    this.routes.push({ method, segments: pattern.split('/').filter(Boolean), handler });
    return this;
  }

  get(pattern: string, handler: Handler): this {
    return this.add('GET', pattern, handler);
  }
  post(pattern: string, handler: Handler): this {
    return this.add('POST', pattern, handler);
  }
  put(pattern: string, handler: Handler): this {
    return this.add('PUT', pattern, handler);
  }
  patch(pattern: string, handler: Handler): this {
    return this.add('PATCH', pattern, handler);
  }
  delete(pattern: string, handler: Handler): this {
    return this.add('DELETE', pattern, handler);
  }

  /** Every registered route (method and `/a/:param` pattern), in registration order. */
  table(): { method: string; pattern: string }[] {
    return this.routes.map((r) => ({ method: r.method, pattern: '/' + r.segments.join('/') }));
  }

  /** Find the handler for a request; throws 404/405 `SvcError`s. */
  match(method: string, pathname: string): { handler: Handler; params: Record<string, string> } {
    let parts: string[];
    try {
      parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      throw new SvcError('svc_bad_request', 'malformed percent-encoding in path');
    }
    const allowed: string[] = [];
    for (const route of this.routes) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) return { handler: route.handler, params };
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

/** Run a handler, turning thrown errors into problem+json and logging the unexpected ones. */
export async function runHandler(handler: Handler, ctx: RequestContext, log: Logger): Promise<void> {
  try {
    await handler(ctx);
  } catch (err) {
    if (!(err instanceof SvcError)) log.error('request failed', { method: ctx.req.method, err });
    sendError(ctx.res, err);
  }
}
