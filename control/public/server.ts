/**
 * The public read API listener ({api_url}). `publicRouter` is where its routes are
 * registered; `publicListener` puts the edge in front of it: the per-client-IP limit first,
 * then the User-Agent allow-list (docs/design.md §7), then the routes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerProblemsWith, sendJson } from '../../protocol/http';
import { HEALTH_BODY } from '../../protocol/wire';
import { registerApplicationRoutes } from '../applications/routes';
import type { Logger } from '../../protocol/log';
import type { ControlContext } from '../context';
import { Router } from '../http/router';
import { splitTarget } from '../http/serve';
import { dispatcher } from './dispatch';
import { problemPages } from './pages/respond';
import { IpRateLimiter } from './rate-limit';
import { registerPublicReadRoutes } from './routes';
import { UserAgentFilter } from './ua-filter';

export function publicRouter(ctx: ControlContext): Router {
  const router = new Router().get('/health', ({ res }) => sendJson(res, 200, HEALTH_BODY));
  registerPublicReadRoutes(router, ctx);
  registerApplicationRoutes(router, ctx);
  return router;
}

/** A per-client-IP limiter with the `limits.public*` policy (shared by the public API and the indexer). */
export function publicIpLimiter(ctx: ControlContext): IpRateLimiter {
  return new IpRateLimiter({
    limit: { count: ctx.config.limits.publicCount, windowS: ctx.config.limits.publicWindowS },
    now: ctx.now,
    trustedProxyHops: ctx.config.public.trustedProxyHops,
  });
}

/**
 * The whole {api_url} request listener: IP limit, User-Agent filter, then `publicRouter`. A
 * browser gets every error as an HTML page (`problemPages`), programs problem+json.
 */
export function publicListener(ctx: ControlContext, log: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  const dispatch = dispatcher(publicRouter(ctx), log);
  const limiter = publicIpLimiter(ctx);
  const userAgents = new UserAgentFilter(ctx.config.public.userAgentAllow, ctx.config.public.userAgentExemptPaths);
  const pages = problemPages(() => ({ api: ctx.urls.api, indexer: ctx.urls.indexer }));
  return (req, res) => {
    answerProblemsWith(res, pages);
    if (!limiter.admit(req, res)) return;
    const [pathname, search] = splitTarget(req.url);
    if (!userAgents.admit(req, res, pathname)) return;
    dispatch(req, res, pathname, search);
  };
}
