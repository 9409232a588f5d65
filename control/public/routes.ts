/**
 * The read routes of the public API ({api_url}): providers, status and the changelog as JSON;
 * the agent's own account is `account.ts`, the pages and feeds are `pages/routes.ts`. Every answer is cached (`cache.*TtlS`) with `Cache-Control`, `ETag` and 304.
 */
import { intParam } from '../http/validate';
import { CHANGELOG_DEFAULT_LIMIT, CHANGELOG_MAX_LIMIT, type PublicChangelogAnswer } from '../../protocol/public';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { renderDocument } from '../../protocol/openapi';
import { registerAccountRoutes } from './account';
import { JSON_CONTENT_TYPE, ResponseCache, jsonAnswer } from '../http/cache';
import { OpaqueIds } from '../../protocol/opaque-ids';
import { providersAnswer, publicChangelog } from './reads';
import { registerPageRoutes } from './pages/routes';
import { statusAnswer } from './status';

/** Public JSON may be read by any web page (it is public and carries no credentials). */
const JSON_HEADERS = { 'access-control-allow-origin': '*', 'x-content-type-options': 'nosniff' };

export function registerPublicReadRoutes(router: Router, ctx: ControlContext): void {
  const ids = new OpaqueIds(ctx.store.idSecret);
  const providers = new ResponseCache({ ttlS: ctx.config.cache.providersTtlS, now: ctx.now });
  const status = new ResponseCache({ ttlS: ctx.config.cache.statusTtlS, now: ctx.now });

  router.get('/api/v1/providers', async ({ req, res }) =>
    providers.send(req, res, 'providers', async () =>
      jsonAnswer(await providersAnswer(ctx.store, ids, ctx.config.tiers, ctx.now()), JSON_HEADERS),
    ),
  );

  router.get('/openapi.json', async ({ req, res }) =>
    status.send(req, res, 'openapi', () => ({
      body: Buffer.from(renderDocument('public')),
      contentType: JSON_CONTENT_TYPE,
      headers: JSON_HEADERS,
    })),
  );

  router.get('/api/v1/status', async ({ req, res }) =>
    status.send(req, res, 'json', async () => jsonAnswer(await statusAnswer(ctx, ids), JSON_HEADERS)),
  );

  router.get('/api/v1/changelog', { query: ['limit'] }, async ({ req, res, query }) => {
    const limit = intParam(query, 'limit', CHANGELOG_DEFAULT_LIMIT, CHANGELOG_MAX_LIMIT);
    const answer = async (): Promise<PublicChangelogAnswer> => ({ entries: await publicChangelog(ctx.store, limit) });
    await status.send(req, res, `changelog:${limit}`, async () => jsonAnswer(await answer(), JSON_HEADERS));
  });

  // The agent's own account, read with its beta key (`account.ts`).
  registerAccountRoutes(router, ctx, ids);

  // The pages (`/status`, `/providers`, `/providers/<id>`) and the Atom feeds.
  registerPageRoutes(router, ctx, ids);
}
