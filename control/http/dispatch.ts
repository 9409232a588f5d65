/**
 * Request dispatch for the public API and indexer listeners: the same `Router` and error
 * handling as `http/serve.ts`, with a memo of exact-path matches in front. Public reads are a
 * handful of fixed paths answered from cache, so skipping the URL parse and the route scan
 * for them is most of the listener's own cost (see `bench/providers.js`). Paths with
 * parameters, unknown paths and anything unusual go through `requestListener` unchanged.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../runtime/log';
import { NO_SCOPES, runHandler, type Handler, type Router } from './router';
import { requestListener } from './serve';

/** Most (method, path) pairs remembered. Only parameterless routes that matched are kept. */
const MEMO_LIMIT = 64;
const EMPTY_PARAMS: Record<string, string> = Object.freeze({});
/** Targets that take the fast path: an absolute path of plain characters, maybe a query. */
const PLAIN_TARGET = /^\/[A-Za-z0-9/._-]*$/;

export type Dispatch = (req: IncomingMessage, res: ServerResponse, pathname: string, search: string) => void;

export function dispatcher(router: Router, log: Logger): Dispatch {
  const fallback = requestListener([{ prefix: '/', router }], log);
  const memo = new Map<string, Handler>();
  return (req, res, pathname, search) => {
    const method = req.method ?? 'GET';
    const key = `${method} ${pathname}`;
    let handler = memo.get(key);
    if (handler === undefined) {
      if (!PLAIN_TARGET.test(pathname) || pathname.includes('//') || memo.size >= MEMO_LIMIT) return fallback(req, res);
      let found: { handler: Handler; params: Record<string, string> };
      try {
        found = router.match(method, pathname);
      } catch {
        return fallback(req, res); // 404 / 405 answered the usual way
      }
      if (Object.keys(found.params).length > 0) return fallback(req, res);
      handler = found.handler;
      memo.set(key, handler);
    }
    void runHandler(
      handler,
      { req, res, params: EMPTY_PARAMS, query: new URLSearchParams(search), actor: 'anonymous', tokenId: null, scopes: NO_SCOPES },
      log,
    );
  };
}
