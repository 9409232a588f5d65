/**
 * `/_sync/v1/…` (sync token): the snapshot stream, acks, and outcome batches; and the admin
 * side of propagation (`/_admin/v1/sync/wait`, `/_admin/v1/gateways`).
 */
import { z } from 'zod';
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../protocol/http';
import { OutcomeBatch, type OutcomeAck } from '../../protocol/outcome';
import { SyncAck } from '../../protocol/snapshot';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';
import type { SyncHub } from './hub';

/** Largest outcome batch body: 10,000 records of a few hundred bytes. @default 16 MiB */
export const OUTCOME_BATCH_LIMIT_BYTES = 16 * 1024 * 1024;

const GATEWAY_ID = /^[A-Za-z0-9._-]{1,64}$/;

const StreamQuery = z.object({
  gateway_id: z.string().regex(GATEWAY_ID, { message: 'must be 1 to 64 of A-Z a-z 0-9 . _ -' }),
  version: z.coerce.number().int().min(0).default(0),
  epoch: z.coerce.number().int().min(0).optional(),
});

const WaitRequest = z
  .object({ version: z.number().int().min(0), timeout_ms: z.number().int().min(0).max(600_000).default(30_000) })
  .strict();

export function registerSyncRoutes(router: Router, ctx: ControlContext, hub: SyncHub): void {
  router.get('/_sync/v1/stream', ({ req, res, query }) => {
    const q = parseBody(StreamQuery, Object.fromEntries(query));
    hub.connect(req, res, q.gateway_id, q.version, q.epoch ?? null);
  });

  router.post('/_sync/v1/ack', async ({ req, res }) => {
    const body = parseBody(SyncAck, await readJson(req));
    if (body.version > ctx.store.version()) throw new SvcError('svc_conflict', `version ${body.version} does not exist yet`);
    hub.ack(body);
    sendJson(res, 200, { ok: true });
  });

  router.post('/_sync/v1/outcomes', async ({ req, res }) => {
    const batch = parseBody(OutcomeBatch, await readJson(req, OUTCOME_BATCH_LIMIT_BYTES));
    const now = ctx.now();
    const accepted = ctx.store.outcomes.ingest(batch.records, now);
    ctx.store.gateways.seen(batch.gateway_id, now);
    const ack: OutcomeAck = { accepted, duplicates: batch.records.length - accepted };
    sendJson(res, 200, ack);
  });
}

export function registerPropagationRoutes(router: Router, hub: SyncHub): void {
  router.post('/_admin/v1/sync/wait', async ({ req, res }) => {
    const body = parseBody(WaitRequest, await readJson(req));
    sendJson(res, 200, await hub.wait(body.version, body.timeout_ms));
  });

  router.get('/_admin/v1/gateways', ({ res }) => sendJson(res, 200, { gateways: hub.status() }));
}
