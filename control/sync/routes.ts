/**
 * `/_sync/v1/…` (sync token): the snapshot stream, acks, and outcome batches; and the admin
 * side of propagation and shares (`/_admin/v1/sync/wait`, `/_admin/v1/gateways`,
 * `/_admin/v1/gateways/{id}/weight`).
 */
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../runtime/http';
import type { OutcomeAck } from '../../protocol/outcome';
import { GatewayId } from '../../protocol/snapshot';
import {
  SetGatewayWeightRequest,
  WaitRequest,
  type GatewayWeightChange,
  type GatewaysView,
  type WaitResult,
} from '../../protocol/gateways';
import { StreamQuery, SyncAck, type SyncAckAnswer } from '../../protocol/snapshot';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';
import type { SyncHub } from './hub';
import type { IngestCounter } from '../ingest-seq';
import { parseOutcomeBatch } from './outcome-batch';

/** Largest outcome batch body: 10,000 records of a few hundred bytes. @default 16 MiB */
export const OUTCOME_BATCH_LIMIT_BYTES = 16 * 1024 * 1024;

/** `ingest`: this process's count of committed outcome batches, which each batch's answer names. */
export function registerSyncRoutes(router: Router, ctx: ControlContext, hub: SyncHub, ingest: IngestCounter): void {
  router.get('/_sync/v1/stream', { query: ['gateway_id', 'version', 'epoch', 'engine', 'instance'] }, async ({ req, res, query }) => {
    const q = parseBody(StreamQuery, Object.fromEntries(query));
    await hub.connect(req, res, q.gateway_id, q.version, q.epoch ?? null, q.engine ?? null, q.instance ?? null);
  });

  router.post('/_sync/v1/ack', async ({ req, res }) => {
    const body = parseBody(SyncAck, await readJson(req));
    // The hub knows every version it sent; the store is asked only about one it has not seen.
    if (body.version > hub.currentVersion() && body.version > (await ctx.store.version())) {
      throw new SvcError('svc_conflict', `version ${body.version} does not exist yet`);
    }
    await hub.ack(body);
    sendJson(res, 200, { ok: true } satisfies SyncAckAnswer);
  });

  router.post('/_sync/v1/outcomes', async ({ req, res }) => {
    const batch = parseOutcomeBatch(await readJson(req, OUTCOME_BATCH_LIMIT_BYTES));
    const now = ctx.now();
    const accepted = await ctx.store.outcomes.ingest(batch.records, now);
    // Numbered once committed: a coverage evaluation that starts at this number or later reads it.
    const seq = ingest.committed();
    await hub.seen(batch.gateway_id, now);
    const ack: OutcomeAck = {
      accepted,
      duplicates: batch.records.length - accepted,
      ingest_seq: seq,
      ingest_instance: ingest.instance,
    };
    sendJson(res, 200, ack);
  });
}

export function registerPropagationRoutes(router: Router, hub: SyncHub, ctx: ControlContext): void {
  router.post('/_admin/v1/sync/wait', async ({ req, res }) => {
    const body = parseBody(WaitRequest, await readJson(req));
    sendJson(res, 200, (await hub.wait(body.version, body.timeout_ms)) satisfies WaitResult);
  });

  router.get('/_admin/v1/gateways', async ({ res }) => {
    const body: GatewaysView = { limits_mode: hub.mode, lease_s: hub.leaseS, gateways: await ctx.gateways() };
    sendJson(res, 200, body);
  });

  router.put('/_admin/v1/gateways/:id/weight', async ({ req, res, params, actor, tokenId }) => {
    const id = params.id!;
    const input = parseBody(SetGatewayWeightRequest, await readJson(req));
    const before = GatewayId.safeParse(id).success ? await ctx.store.gateways.byId(id) : undefined;
    if (!before) throw new SvcError('svc_not_found', `no gateway ${id} has connected to this control`);
    const changed = before.weight !== input.weight;
    if (changed) {
      await ctx.store.mutate(
        { actor, tokenId, now: ctx.now() },
        { action: 'gateways.weight', target: id, detail: { weight: input.weight, previous: before.weight } },
        (tx) => tx.gateways.setWeight(id, input.weight),
      );
      hub.weightChanged(id, input.weight);
    }
    const gateways = await ctx.gateways();
    const body: GatewayWeightChange = { gateway: gateways.find((g) => g.id === id)!, changed, limits_mode: hub.mode, gateways };
    sendJson(res, 200, body);
  });
}
