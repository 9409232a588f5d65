/**
 * Request entry for control's listeners: parse the URL once, optionally authenticate, route,
 * and turn every failure into problem+json.
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
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://control.invalid');
    } catch {
      sendError(res, new SvcError('svc_bad_request', 'malformed request target'));
      return;
    }
    const mount = mounts.find((m) => url.pathname.startsWith(m.prefix) || url.pathname === m.prefix.replace(/\/$/, ''));
    if (!mount) {
      sendError(res, new SvcError('svc_not_found', `no route for ${req.method} ${url.pathname}`));
      return;
    }
    try {
      const actor = mount.authenticate ? mount.authenticate(req) : 'anonymous';
      const { handler, params } = mount.router.match(req.method ?? 'GET', url.pathname);
      void runHandler(handler, { req, res, params, query: url.searchParams, actor }, log);
    } catch (err) {
      req.resume();
      sendError(res, err);
    }
  };
}
