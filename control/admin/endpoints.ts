/**
 * `/_admin/v1/endpoints`: add, list, show, update, remove. Injected header values are
 * write-only; answers list header names only.
 */
import {
  CreateEndpointRequest,
  UpdateEndpointRequest,
  type EndpointChange,
  type EndpointList,
  type EndpointRemoved,
  type EndpointView,
} from '../../protocol/admin';
import { SvcError } from '../../protocol/errors';
import { readJson, sendJson } from '../../runtime/http';
import type { ControlContext } from '../context';
import type { Router } from '../http/router';
import { parseBody } from '../http/validate';
import { parseEndpointRow, type EndpointRecord, type EndpointRow } from '../store/endpoints';

async function mustRecord(ctx: ControlContext, id: string): Promise<EndpointRecord> {
  const record = await ctx.store.endpoints.record(id);
  if (!record) throw new SvcError('svc_not_found', `no endpoint with id ${id}`);
  return record;
}

/** Audit detail for an endpoint change: header names only, never values. */
function auditDetail(fields: Record<string, unknown>): Record<string, unknown> {
  const { headers, ...rest } = fields;
  return headers === undefined ? rest : { ...rest, headers: Object.keys(headers as object) };
}

export function endpointView(row: EndpointRow): EndpointView {
  const { headers, created_at, updated_at, display_name, billing, ...fields } = parseEndpointRow(row);
  return {
    ...fields,
    display_name: display_name ?? null,
    billing: billing ?? 'postpaid',
    injected_headers: Object.keys(headers).sort(),
    created_at: new Date(created_at).toISOString(),
    updated_at: new Date(updated_at).toISOString(),
  };
}

export function registerEndpointRoutes(router: Router, ctx: ControlContext): void {
  router.post('/_admin/v1/endpoints', async ({ req, res, actor, tokenId }) => {
    const input = parseBody(CreateEndpointRequest, await readJson(req));
    if (await ctx.store.endpoints.byId(input.id)) throw new SvcError('svc_conflict', `endpoint ${input.id} already exists; use update`);
    const now = ctx.now();
    const record: EndpointRecord = {
      id: input.id,
      upstream: input.upstream,
      methods: [...new Set(['POST' as const, ...(input.methods ?? [])])],
      timeout_ms: input.timeout_ms ?? ctx.config.endpoints.timeoutMs,
      price: input.price ?? 0,
      premium: input.premium ?? 0,
      sla_ms: input.sla_ms ?? ctx.config.endpoints.slaMs,
      refund_cap_per_hour: input.refund_cap_per_hour ?? 0,
      refund_cap_per_call: input.refund_cap_per_call ?? 0,
      refund_cap_per_batch: input.refund_cap_per_batch ?? 0,
      treasury_fee_bps: input.treasury_fee_bps ?? 0,
      billing: input.billing ?? 'postpaid',
      headers: input.headers ?? {},
      response_schema: input.response_schema ?? null,
      display_name: input.display_name ?? null,
      created_at: now,
      updated_at: now,
    };
    const { version } = await ctx.store.mutate(
      { actor, tokenId, now },
      { action: 'endpoints.add', target: input.id, detail: auditDetail(input), changes: [{ kind: 'endpoint', entity: input.id }] },
      async (tx) => {
        // Added meanwhile, through this control or another on the database.
        if (await tx.endpoints.byId(input.id)) throw new SvcError('svc_conflict', `endpoint ${input.id} already exists; use update`);
        await tx.endpoints.save(record);
      },
    );
    sendJson(res, 201, { ...endpointView((await ctx.store.endpoints.byId(input.id))!), version } satisfies EndpointChange);
  });

  router.get('/_admin/v1/endpoints', async ({ res }) => {
    sendJson(res, 200, { endpoints: (await ctx.store.endpoints.list()).map(endpointView) } satisfies EndpointList);
  });

  router.get('/_admin/v1/endpoints/:id', async ({ res, params }) => {
    await mustRecord(ctx, params.id!);
    sendJson(res, 200, endpointView((await ctx.store.endpoints.byId(params.id!))!) satisfies EndpointView);
  });

  router.patch('/_admin/v1/endpoints/:id', async ({ req, res, params, actor, tokenId }) => {
    const current = await mustRecord(ctx, params.id!);
    const input = parseBody(UpdateEndpointRequest, await readJson(req));
    if (Object.keys(input).length === 0) throw new SvcError('svc_bad_request', 'nothing to update');
    const now = ctx.now();
    // The display name is for the public pages only: gateways never see it, so renaming alone changes no state version.
    const publicOnly = Object.keys(input).every((field) => field === 'display_name');
    const { version } = await ctx.store.mutate(
      { actor, tokenId, now },
      {
        action: 'endpoints.update',
        target: current.id,
        detail: auditDetail(input),
        changes: publicOnly ? [] : [{ kind: 'endpoint', entity: current.id }],
      },
      async (tx) => {
        // Applied to the endpoint as it is under the writer lock, not as read above: another
        // update (through this control or another on the database) may have committed since.
        const latest = await tx.endpoints.record(current.id);
        if (!latest) throw new SvcError('svc_not_found', `no endpoint with id ${current.id}`);
        const next: EndpointRecord = {
          ...latest,
          ...input,
          methods: input.methods ? [...new Set(['POST' as const, ...input.methods])] : latest.methods,
          headers: input.headers ?? latest.headers,
          updated_at: now,
        };
        await tx.endpoints.save(next);
      },
    );
    sendJson(res, 200, { ...endpointView((await ctx.store.endpoints.byId(current.id))!), version } satisfies EndpointChange);
  });

  router.delete('/_admin/v1/endpoints/:id', async ({ res, params, actor, tokenId }) => {
    const current = await mustRecord(ctx, params.id!);
    const now = ctx.now();
    const { version } = await ctx.store.mutate(
      { actor, tokenId, now },
      { action: 'endpoints.remove', target: current.id, changes: [{ kind: 'endpoint', entity: current.id }] },
      async (tx) => {
        // Removed meanwhile, through this control or another on the database.
        if (!(await tx.endpoints.remove(current.id, now))) throw new SvcError('svc_not_found', `no endpoint with id ${current.id}`);
      },
    );
    sendJson(res, 200, { id: current.id, removed: true, version } satisfies EndpointRemoved);
  });
}
