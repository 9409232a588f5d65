/**
 * Issuing API keys and their secrets, for the admin API (`POST /_admin/v1/keys`, rotate) and
 * for applications (approve, redeliver): the one place a key or a secret is created. A shared
 * module: both features import it.
 */
import type { IssueKeyRequest, IssuedKey, KeyView } from '../protocol/admin';
import { SvcError } from '../protocol/errors';
import { generateKey, hashKey, keyStub, newId } from '../protocol/keys';
import type { ControlContext } from './context';
import { keyStatus, ownAccountId, type KeyRow, type SecretRow } from './store/keys';
import type { AccountRow } from './store/accounts';
import type { Actor, StoreTables } from './store';

/** A key as the admin API shows it, with its live secrets. */
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function keyView(row: KeyRow, secrets: SecretRow[], now: number): KeyView {
  const liftLive = row.lift_until !== null && row.lift_until > now;
  const status = keyStatus(row, now);
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    status,
    created_at: iso(row.created_at)!,
    expires_at: iso(row.expires_at),
    revoked_at: iso(row.revoked_at),
    wallet: row.wallet,
    endpoints: JSON.parse(row.endpoints) as string[],
    limit: row.limit_count !== null && row.limit_window_s !== null ? { count: row.limit_count, window_seconds: row.limit_window_s } : null,
    lift:
      liftLive && row.lift_count !== null && row.lift_window_s !== null
        ? { count: row.lift_count, window_seconds: row.lift_window_s, until: iso(row.lift_until)! }
        : null,
    application_id: row.application_id,
    account_id: row.account_id,
    secrets:
      status === 'active' ? secrets.map((s) => ({ prefix: s.prefix, created_at: iso(s.created_at)!, expires_at: iso(s.expires_at) })) : [],
  };
}

export async function viewKey(ctx: ControlContext, row: KeyRow): Promise<KeyView> {
  const now = ctx.now();
  return keyView(row, await ctx.store.keys.liveSecrets(row.id, now), now);
}

/**
 * Key `id` as `viewKey` shows it, read in a change's transaction (`tx`): as that change left
 * it, whatever another change commits after it.
 */
export async function viewKeyIn(tx: StoreTables, id: string, now: number): Promise<KeyView> {
  return keyView((await tx.keys.byId(id))!, await tx.keys.liveSecrets(id, now), now);
}

/** The key `id`, or 404 `svc_not_found`. */
export async function keyOrNotFound(ctx: ControlContext, id: string): Promise<KeyRow> {
  const row = await ctx.store.keys.byId(id);
  if (!row) throw new SvcError('svc_not_found', `no key with id ${id}`);
  return row;
}

/** A new secret: the plaintext (shown once, never stored), its display stub and its hash. */
export interface NewSecret {
  key: string;
  prefix: string;
  hash: string;
}

export function newSecret(): NewSecret {
  const key = generateKey();
  return { key, prefix: keyStub(key), hash: hashKey(key) };
}

/**
 * Inside a `Store.mutate`: the key's live secrets expire at `oldUntil` (now: at once; later: a
 * rotation's grace) and `secret` admits it from now on.
 */
export async function replaceSecrets(tx: StoreTables, keyId: string, secret: NewSecret, oldUntil: number, now: number): Promise<void> {
  await tx.keys.expireSecrets(keyId, oldUntil, now);
  await tx.keys.addSecret(keyId, secret.hash, secret.prefix, now);
}

/** The account `ref` names (its id or name), or 400 `svc_bad_request` naming `field`. */
export async function accountOrBadRequest(ctx: ControlContext, ref: string, field: string): Promise<AccountRow> {
  const row = await ctx.store.accounts.byRef(ref);
  if (row === undefined) {
    throw new SvcError('svc_bad_request', `no account named ${ref}`, {
      extra: { errors: [{ field, message: `no account named ${ref}` }] },
    });
  }
  return row;
}

async function assertEndpointsExist(ctx: ControlContext, ids: string[]): Promise<void> {
  const found = await Promise.all(ids.map((id) => ctx.store.endpoints.byId(id)));
  const missing = ids.filter((_, i) => !found[i]);
  if (missing.length > 0) {
    throw new SvcError('svc_bad_request', `unknown endpoint(s): ${missing.join(', ')}`, {
      extra: { errors: missing.map((id) => ({ field: 'endpoints', message: `no endpoint named ${id}` })) },
    });
  }
}

/**
 * Issue a key: its one secret is generated here and returned once, in plaintext, in the
 * answer (only its hash and display stub are stored). The admin API and approved
 * applications (bound to the application) both issue through this.
 */
export async function issueKey(ctx: ControlContext, by: Actor, input: IssueKeyRequest): Promise<IssuedKey> {
  await assertEndpointsExist(ctx, input.endpoints ?? []);
  // Accounts are never removed: one found now is there when the key is written.
  const shared = input.account === undefined ? null : await accountOrBadRequest(ctx, input.account, 'account');
  const now = ctx.now();
  const { key, prefix, hash } = newSecret();
  const id = newId('key');
  const accountId = shared?.id ?? ownAccountId(id);
  const { version } = await ctx.store.mutate(
    { ...by, now },
    {
      action: 'keys.issue',
      target: id,
      detail: {
        prefix,
        name: input.name ?? null,
        endpoints: input.endpoints ?? [],
        application_id: input.application_id ?? null,
        account_id: accountId,
      },
      changes: [{ kind: 'key', entity: id }],
    },
    async (tx) => {
      // A key issued without an account gets one of its own, named after the key (the store makes
      // it, with the wallet given); one issued into an account shows the account's wallet.
      const wallet = shared === null ? (input.wallet ?? null) : ((await tx.accounts.byId(shared.id))?.wallet ?? null);
      await tx.keys.insert({
        id,
        name: input.name ?? null,
        prefix,
        hash,
        created_at: now,
        created_by: by.actor,
        expires_at: input.expires_in_seconds === undefined ? null : now + input.expires_in_seconds * 1000,
        wallet,
        endpoints: [...new Set(input.endpoints ?? [])],
        limit: input.limit ?? null,
        application_id: input.application_id ?? null,
        ...(shared === null ? {} : { account_id: shared.id }),
      });
    },
  );
  return { ...(await viewKey(ctx, await keyOrNotFound(ctx, id))), key, version };
}
