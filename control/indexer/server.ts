/** The indexer listener ({indexer_url}). */
import { sendJson } from '../../protocol/http';
import type { ControlContext } from '../context';
import { Router } from '../http/router';
import { HEALTH_BODY } from '../public/server';

export function indexerRouter(_ctx: ControlContext): Router {
  return new Router().get('/health', ({ res }) => sendJson(res, 200, HEALTH_BODY));
}
