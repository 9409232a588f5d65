/**
 * Request entry for control's listeners: split the request target into path and query,
 * optionally authenticate, route, optionally authorize the route for the caller, and turn every
 * failure into problem+json.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SvcError } from '../../protocol/errors';
import { sendError } from '../../runtime/http';
import type { Logger } from '../../runtime/log';
import { NO_SCOPES, logFailure, runHandler, type Caller, type MatchedRoute, type Router } from './router';

export interface Mount<C extends Caller = Caller> {
  /** Path prefix this mount answers (e.g. `/_admin/`). */
  prefix: string;
  router: Router;
  /**
   * When set, every request under the prefix passes this first, before routing (so an unknown
   * path tells a caller without a token nothing): it answers who is calling (the actor and
   * token the audit log records) or throws (e.g. 401 `svc_unauthorized`).
   */
  authenticate?: (req: IncomingMessage) => C | Promise<C>;
  /** When set, the route matched must be allowed to the caller: throws (e.g. 403) otherwise, before its handler runs. */
  authorize?(caller: C, route: MatchedRoute): void;
}

const ANONYMOUS: Caller = { actor: 'anonymous', tokenId: null };

export function requestListener(mounts: readonly Mount[], log: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // The path as sent: the router refuses dot segments rather than resolving them (a URL
    // parser would turn `/a/%2e%2e/b` into `/b`, and `//host/b` into `/b`).
    const [pathname, search] = splitTarget(req.url);
    const mount = mounts.find((m) => pathname.startsWith(m.prefix) || pathname === m.prefix.replace(/\/$/, ''));
    if (!mount) {
      sendError(res, new SvcError('svc_not_found', `no route for ${req.method} ${pathname}`));
      return;
    }
    void (async () => {
      let run: () => Promise<void>;
      try {
        const caller = mount.authenticate ? await mount.authenticate(req) : ANONYMOUS;
        const { handler, params, route } = mount.router.match(req.method ?? 'GET', pathname);
        mount.authorize?.(caller, route);
        const query = new URLSearchParams(search);
        run = () =>
          runHandler(
            handler,
            { req, res, params, query, actor: caller.actor, tokenId: caller.tokenId, scopes: caller.scopes ?? NO_SCOPES },
            log,
          );
      } catch (err) {
        // The store unreachable while a token is looked up is a 503 `svc_store_unavailable`; anything unexpected is logged, and its answer is a 500 without details.
        logFailure(log, req.method, err);
        req.resume();
        sendError(res, err);
        return;
      }
      await run();
    })();
  };
}

/** Split a request target into its path and its query (without `?`). */
export function splitTarget(target: string | undefined): [string, string] {
  const url = target ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? [url, ''] : [url.slice(0, q), url.slice(q + 1)];
}
