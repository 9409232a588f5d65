/**
 * Deciding applications: approve (issue a key bound to the application, then deliver it),
 * reject, and redeliver (a new secret for the application's key, delivered again).
 *
 * Delivery happens after the approval is committed: a failed delivery leaves the application
 * approved and its key active and revocable, and the answer, `applications show` and the
 * delivery log all say so. The plaintext key exists only in memory here, in the delivered
 * message and (operator notifier) in the approving operator's answer.
 */
import {
  APPROVAL_EVENT,
  type ApprovalResult,
  type ApproveApplicationRequest,
  type DeliveryReport,
  type NotifierKind,
} from '../../protocol/applications';
import { SvcError } from '../../protocol/errors';
import { newId } from '../../protocol/keys';
import { issueKey, newSecret, replaceSecrets } from '../keys';
import type { ControlContext } from '../context';
import type { Actor } from '../store';
import type { ApplicationRow } from '../store/applications';
import { keyStatus } from '../store/keys';
import { createNotifier, type DeliveryMessage, type DeliveryOutcome } from './notifier';
import { instructions, operatorMessage } from './notifier/message';
import { applicationView } from './view';

/** Longest key name; the key is named after the contact and the application. */
const KEY_NAME_MAX = 120;

export async function mustGetApplication(ctx: ControlContext, id: string): Promise<ApplicationRow> {
  const row = await ctx.store.applications.byId(id);
  if (!row) throw new SvcError('svc_not_found', `no application with id ${id}`);
  return row;
}

function keyName(row: ApplicationRow): string {
  const suffix = ` (${row.id})`;
  return row.contact_name.slice(0, KEY_NAME_MAX - suffix.length) + suffix;
}

interface IssuedSecret {
  keyId: string;
  key: string;
  prefix: string;
  endpoints: string[];
  version: number;
}

/** Deliver `secret` for `row` through `kind`'s notifier; log every attempt; record the outcome. */
async function deliver(
  ctx: ControlContext,
  by: Actor,
  row: ApplicationRow,
  secret: IssuedSecret,
  kind: NotifierKind,
): Promise<ApprovalResult> {
  const notifier = createNotifier(ctx.config, ctx.now, kind);
  const endpoints = secret.endpoints.length > 0 ? secret.endpoints : (await ctx.store.endpoints.list()).map((e) => e.id);
  const marketUrl = ctx.config.applications.marketUrl ?? null;
  const message: DeliveryMessage = {
    type: APPROVAL_EVENT,
    delivery_id: newId('dlv'),
    application_id: row.id,
    contact_name: row.contact_name,
    messaging_handle: row.messaging_handle,
    key: secret.key,
    key_id: secret.keyId,
    endpoints,
    market_url: marketUrl,
    instructions: instructions(endpoints, marketUrl),
    sent_at: new Date(ctx.now()).toISOString(),
  };
  let outcome: DeliveryOutcome;
  try {
    outcome = await notifier.deliver(message, (a) =>
      ctx.store.applications.recordAttempt({ ...a, application_id: row.id, key_id: secret.keyId, notifier: kind }),
    );
  } catch (err) {
    ctx.log.error('key delivery failed unexpectedly', { application_id: row.id, key_id: secret.keyId, err });
    outcome = { status: 'failed', attempts: 0, error: 'internal error in the notifier' };
  }
  await ctx.store.mutate(
    { ...by, now: ctx.now() },
    {
      action: 'applications.deliver',
      target: row.id,
      detail: {
        key_id: secret.keyId,
        prefix: secret.prefix,
        notifier: kind,
        status: outcome.status,
        attempts: outcome.attempts,
        error: outcome.error,
      },
    },
    async (tx) => await tx.applications.setDelivery(row.id, outcome.status, kind, ctx.now(), outcome.error),
  );
  const fields = { application_id: row.id, key_id: secret.keyId, notifier: kind, attempts: outcome.attempts };
  if (outcome.status === 'failed') ctx.log.warn('application key delivery failed', { ...fields, error: outcome.error });
  else ctx.log.info('application key delivered', { ...fields, status: outcome.status });

  const delivery: DeliveryReport = {
    notifier: kind,
    status: outcome.status,
    attempts: outcome.attempts,
    error: outcome.error,
    deliver_to: { contact_name: row.contact_name, messaging_handle: row.messaging_handle },
    next_step:
      outcome.status === 'failed'
        ? `application ${row.id} stays approved and key ${secret.keyId} is active but was not delivered: ` +
          `run \`svcctl applications redeliver ${row.id}\` to deliver a new secret (the undelivered one stops working), ` +
          `or \`svcctl keys revoke ${secret.keyId}\``
        : null,
  };
  const result: ApprovalResult = {
    application: applicationView(await mustGetApplication(ctx, row.id), ctx.now()),
    key_id: secret.keyId,
    key_prefix: secret.prefix,
    endpoints: secret.endpoints,
    version: secret.version,
    delivery,
  };
  if (kind === 'operator') {
    result.key = secret.key;
    result.message = operatorMessage(message);
  }
  return result;
}

export async function approveApplication(
  ctx: ControlContext,
  by: Actor,
  id: string,
  input: ApproveApplicationRequest,
): Promise<ApprovalResult> {
  const row = await mustGetApplication(ctx, id);
  if (row.status === 'approved') {
    throw new SvcError('svc_conflict', `application ${id} is already approved with key ${row.key_id}; use redeliver to send a new secret`);
  }
  if (row.status === 'rejected') throw new SvcError('svc_conflict', `application ${id} was rejected`);
  const issued = await issueKey(ctx, by, {
    name: keyName(row),
    ...(row.wallet !== null ? { wallet: row.wallet } : {}),
    ...(input.endpoints !== undefined ? { endpoints: input.endpoints } : {}),
    ...(input.expires_in_seconds !== undefined ? { expires_in_seconds: input.expires_in_seconds } : {}),
    application_id: id,
  });
  const now = ctx.now();
  await ctx.store.mutate(
    { ...by, now },
    { action: 'applications.approve', target: id, detail: { key_id: issued.id, prefix: issued.prefix, endpoints: issued.endpoints } },
    async (tx) => {
      if (!(await tx.applications.approve(id, now, by.actor, issued.id)))
        throw new SvcError('svc_conflict', `application ${id} is no longer pending`);
    },
  );
  return deliver(
    ctx,
    by,
    row,
    { keyId: issued.id, key: issued.key, prefix: issued.prefix, endpoints: issued.endpoints, version: issued.version },
    ctx.config.applications.notifier,
  );
}

export async function rejectApplication(ctx: ControlContext, by: Actor, id: string, reason: string | null): Promise<ApplicationRow> {
  const row = await mustGetApplication(ctx, id);
  if (row.status !== 'pending') {
    throw new SvcError(
      'svc_conflict',
      row.status === 'approved'
        ? `application ${id} is approved; revoke its key ${row.key_id} instead`
        : `application ${id} is already rejected`,
    );
  }
  const now = ctx.now();
  await ctx.store.mutate({ ...by, now }, { action: 'applications.reject', target: id, detail: { reason } }, async (tx) => {
    if (!(await tx.applications.reject(id, now, by.actor, reason)))
      throw new SvcError('svc_conflict', `application ${id} is no longer pending`);
  });
  return await mustGetApplication(ctx, id);
}

/**
 * Give the approved application's key a new secret (the old one stops working at once, as in
 * `keys rotate --grace 0`) and deliver it: for a failed delivery or a lost key.
 */
export async function redeliverApplication(ctx: ControlContext, by: Actor, id: string, toOperator: boolean): Promise<ApprovalResult> {
  const row = await mustGetApplication(ctx, id);
  if (row.status !== 'approved' || row.key_id === null)
    throw new SvcError('svc_conflict', `application ${id} is ${row.status}, not approved`);
  const keyRow = await ctx.store.keys.byId(row.key_id);
  const now = ctx.now();
  const status = keyRow ? keyStatus(keyRow, now) : 'revoked';
  if (!keyRow || status !== 'active') {
    throw new SvcError('svc_conflict', `key ${row.key_id} of application ${id} is ${status}; issue a new key with \`svcctl keys issue\``);
  }
  const secret = newSecret();
  const { version } = await ctx.store.mutate(
    { ...by, now },
    {
      action: 'applications.redeliver',
      target: id,
      detail: { key_id: keyRow.id, old_prefix: keyRow.prefix, prefix: secret.prefix },
      changes: [{ kind: 'key', entity: keyRow.id }],
    },
    (tx) => replaceSecrets(tx, keyRow.id, secret, now, now),
  );
  const kind: NotifierKind = toOperator ? 'operator' : ctx.config.applications.notifier;
  return deliver(
    ctx,
    by,
    row,
    { keyId: keyRow.id, key: secret.key, prefix: secret.prefix, endpoints: JSON.parse(keyRow.endpoints) as string[], version },
    kind,
  );
}
