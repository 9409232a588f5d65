/**
 * The public read API listener ({api_url}). `publicRouter` is where its routes are
 * registered, with those of other features passed in by `server.ts`; `publicListener` puts the edge in front of it: the per-client-IP limit first,
 * then the User-Agent allow-list (docs/design.md §7), then the routes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerProblemsWith, sendJson } from '../../runtime/http';
import { HEALTH_BODY } from '../../protocol/wire';
import type { Logger } from '../../runtime/log';
import type { ControlContext, RegisterRoutes } from '../context';
import { Router } from '../http/router';
import { splitTarget } from '../http/serve';
import { dispatcher } from '../http/dispatch';
import { problemPages } from '../pages/respond';
import { publicIpLimiter } from '../http/rate-limit';
import { registerPublicReadRoutes } from './routes';
import { UserAgentFilter } from './ua-filter';

export function publicRouter(ctx: ControlContext, more: readonly RegisterRoutes[] = []): Router {
  const router = new Router().get('/health', ({ res }) => sendJson(res, 200, HEALTH_BODY));
  registerPublicReadRoutes(router, ctx);
  for (const register of more) register(router, ctx);
  return router;
}

/**
 * The whole {api_url} request listener: IP limit, User-Agent filter, then `publicRouter`. A
 * browser gets every error as an HTML page (`problemPages`), programs problem+json.
 */
export function publicListener(
  ctx: ControlContext,
  log: Logger,
  more: readonly RegisterRoutes[] = [],
): (req: IncomingMessage, res: ServerResponse) => void {
  const dispatch = dispatcher(publicRouter(ctx, more), log);
  const limiter = publicIpLimiter(ctx.config, ctx.now);
  const userAgents = new UserAgentFilter(ctx.config.public.userAgentAllow, ctx.config.public.userAgentExemptPaths);
  const pages = problemPages(() => ({ api: ctx.urls.api, indexer: ctx.urls.indexer }));
  return (req, res) => {
    answerProblemsWith(res, pages, 'public');
    if (!limiter.admit(req, res)) return;
    const [pathname, search] = splitTarget(req.url);
    if (!userAgents.admit(req, res, pathname)) return;
    dispatch(req, res, pathname, search);
  };
}
