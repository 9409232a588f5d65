/** The public read API listener ({api_url}). */
import { sendJson } from '../../protocol/http';
import type { ControlContext } from '../context';
import { Router } from '../http/router';

/** Exactly `{"status":"ok","version":"v1"}` (spec §2, DESIGN §7). */
export const HEALTH_BODY = Object.freeze({ status: 'ok', version: 'v1' });

export function publicRouter(_ctx: ControlContext): Router {
  return new Router().get('/health', ({ res }) => sendJson(res, 200, HEALTH_BODY));
}
