/**
 * Request entry for control's listeners: split the request target into path and query,
 * optionally authenticate, route, and turn every failure into problem+json.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SvcError } from '../../protocol/errors';
import { sendError } from '../../protocol/http';
import type { Logger } from '../../protocol/log';
import { runHandler, type Router } from './router';

export interface Mount {
  /** Path prefix this mount answers (e.g. `/_admin/`). */
  prefix: string;
  router: Router;
  /**
   * When set, every request under the prefix passes this first: it answers the caller's name
   * (the actor the audit log records) or throws (e.g. 401 `svc_unauthorized`).
   */
  authenticate?: (req: IncomingMessage) => string;
}

export function requestListener(mounts: Mount[], log: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // The path as sent: the router refuses dot segments rather than resolving them (a URL
    // parser would turn `/a/%2e%2e/b` into `/b`, and `//host/b` into `/b`).
    const [pathname, search] = splitTarget(req.url);
    const mount = mounts.find((m) => pathname.startsWith(m.prefix) || pathname === m.prefix.replace(/\/$/, ''));
    if (!mount) {
      sendError(res, new SvcError('svc_not_found', `no route for ${req.method} ${pathname}`));
      return;
    }
    try {
      const actor = mount.authenticate ? mount.authenticate(req) : 'anonymous';
      const { handler, params } = mount.router.match(req.method ?? 'GET', pathname);
      void runHandler(handler, { req, res, params, query: new URLSearchParams(search), actor }, log);
    } catch (err) {
      req.resume();
      sendError(res, err);
    }
  };
}

/** Split a request target into its path and its query (without `?`). */
export function splitTarget(target: string | undefined): [string, string] {
  const url = target ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? [url, ''] : [url.slice(0, q), url.slice(q + 1)];
}
