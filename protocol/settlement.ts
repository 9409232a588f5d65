/**
 * Settlement views shared by control's settler, the status page, the indexer and `svcctl`.
 * Amounts are integers in micro-units (6 decimals). Every answer is a zod schema with its
 * type inferred, so the admin OpenAPI document is generated from the same definitions.
 */
import { z } from 'zod';
import { PoolCapitalView, PoolCoverage } from './lps';
import { plainString } from './text';
import { WalletAddress } from './wallet';
import { Count, IsoTime, MicroAmount, Millis } from './wire';

export const SETTLER_STATES = ['running', 'idle', 'paused', 'halted'] as const;
export const SettlerState = z.enum(SETTLER_STATES);
export type SettlerState = z.infer<typeof SettlerState>;

/**
 * Why the settler is `halted`: a settled batch has no receipt, or the receipt chain does not
 * verify. Control signs every batch's receipt in the batch's own transaction (batches settled
 * before receipts existed got theirs once, in the receipts backfill), so a missing one means the
 * database was changed outside control. Until an operator restores the database from a backup or
 * re-signs the batch (`svcctl receipts reissue BATCH`), the settler signs and settles nothing. A
 * receipt that was changed, swapped or no longer links to the one before (`batches_without_receipt`
 * 0) is not re-signed: the database is restored from a backup and control restarted.
 */
export const SettlerHalt = z.strictObject({
  /** The oldest settled batch without a receipt, or the batch where the receipt chain stops verifying. */
  batch: z.number().int().min(1),
  /** Settled batches without a receipt, this one included; 0 when the halt is a receipt chain that does not verify. */
  batches_without_receipt: z.number().int().min(0),
  /** The integrity failure, as a sentence naming the batch. */
  reason: z.string(),
});
export type SettlerHalt = z.infer<typeof SettlerHalt>;

/** What the operator does about a halt: restore the database, or re-sign a batch that has no receipt. */
export function settlerHaltWayOut(halt: SettlerHalt): string {
  return halt.batches_without_receipt === 0
    ? 'restore the database from a backup and restart control'
    : `restore the database from a backup, or re-sign the batch with svcctl receipts reissue ${halt.batch}`;
}

/** The control whose settler settles: the one holding the settler's lease among controls on one database. */
export const SettlerLeader = z.strictObject({
  /** Its control id (`ctl_…`). */
  id: z.string(),
  /** The admin URL it serves. */
  url: z.string(),
});
export type SettlerLeader = z.infer<typeof SettlerLeader>;

/**
 * How far the settler has got, as operators (`SettlerStatus`) and the public
 * (`protocol/public.ts`'s `StatusAnswer`) see it alike: the backlog, its lag, the last run and
 * the last batch, which names its endpoint (`endpoint_id`) for operators and its opaque
 * provider (`provider`) for the public.
 */
export function settlerProgress<const Owner extends string>(batchOwner: Owner) {
  const owner = { [batchOwner]: z.string() } as Record<Owner, z.ZodString>;
  return {
    /** Outcomes received and not yet settled. */
    backlog: Count,
    /** Age of the oldest unsettled outcome, ms (null when the backlog is empty). */
    lag_ms: Millis.nullable(),
    last_run_at: IsoTime.nullable(),
    last_batch: z
      .strictObject({ id: z.number().int().min(1), ...owner, calls: Count, refunds: MicroAmount, premiums: MicroAmount, at: IsoTime })
      .nullable(),
  };
}

export const SettlerStatus = z.strictObject({
  /**
   * `running` while a batch is being committed, `idle` between runs, `paused` by an operator,
   * `halted` while a settled batch has no receipt (`halted` names it; it outranks a pause).
   */
  state: SettlerState,
  cadence_ms: z.number().int().min(1),
  batch_cap: z.number().int().min(1),
  ...settlerProgress('endpoint_id'),
  last_error: z.string().nullable(),
  /** Why the settler is halted; null unless `state` is `halted`. */
  halted: SettlerHalt.nullable(),
  /**
   * The control whose settler settles on the cadence (on SQLite always this one); null while no
   * control holds the lease (one takes it within `settler.leaseS` and a cadence).
   */
  leader: SettlerLeader.nullable(),
});
export type SettlerStatus = z.infer<typeof SettlerStatus>;

// ---------------------------------------------------------------------------------------
// Ledger, pool, payouts (admin API shapes; see control/store/ledger.ts)

/** A key's ledger account: what settlement posted to before accounts held the money (now `account:<id>`). */
export const keyAccount = (keyId: string): string => `key:${keyId}`;

/**
 * Why a refund was paid short: the limit that bound it. In tie order (when several limits bind
 * equally, the first marks the call; `control/settler/plan.ts`): the pool could not cover it
 * (`pool_depleted`), the endpoint's hourly cap was reached (`cap_clamped`), its per-batch cap was
 * reached (`batch_capped`), its per-call cap is below the refund owed (`call_capped`).
 */
export const CLAMPS = ['pool_depleted', 'cap_clamped', 'batch_capped', 'call_capped'] as const;
export const Clamp = z.enum(CLAMPS);
export type Clamp = z.infer<typeof Clamp>;

const Micro = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

/** What settlement batches add up to: one batch, or every batch of one settler run. */
export const SettledSums = z.strictObject({
  calls: Count,
  premiums: MicroAmount,
  treasury_fees: MicroAmount,
  /** Refunds paid. */
  refunds: MicroAmount,
  /** Refunds owed before clamping; `refunds_owed - refunds` is the shortfall. */
  refunds_owed: MicroAmount,
  clamped_calls: Count,
});
export type SettledSums = z.infer<typeof SettledSums>;

/** One settlement batch: one endpoint, up to `settler.batchCap` calls, committed in one transaction. */
export const BatchView = z.strictObject({
  id: z.number().int().min(1),
  endpoint_id: z.string(),
  created_at: IsoTime,
  ...SettledSums.shape,
});
export type BatchView = z.infer<typeof BatchView>;

/** Answer to `POST /_admin/v1/settler/run-once`: the batches made and their sums. */
export const RunOnceView = z.strictObject({
  batches: z.array(BatchView),
  ...SettledSums.shape,
  /** Outcomes still unsettled afterwards (received after the run started). */
  backlog: Count,
});
export type RunOnceView = z.infer<typeof RunOnceView>;

/** `GET /_admin/v1/pool`: the pool, what it took in and paid out, and what it could not pay. */
export const PoolView = z.strictObject({
  /** Balance of the pool account. */
  pool: MicroAmount,
  treasury: MicroAmount,
  /** Everything funded into the pool (external → pool: `pool fund` and the liquidity providers' deposits). */
  funded: MicroAmount,
  /** Everything paid to liquidity providers by their withdrawals (pool → external). */
  withdrawn: MicroAmount,
  premiums: MicroAmount,
  treasury_fees: MicroAmount,
  refunds: MicroAmount,
  refunds_owed: MicroAmount,
  /** `refunds_owed - refunds`: refunds clamped away, recorded per call, never paid. */
  shortfall: MicroAmount,
  /** Clamped calls by their clamp. */
  clamped: z.strictObject({ pool_depleted: Count, cap_clamped: Count, batch_capped: Count, call_capped: Count }),
  /** Sum of positive account balances (`account:<id>`): what payouts would pay now. */
  owed_to_keys: MicroAmount,
  /** Everything recorded as paid out (account → external; key → external before accounts). */
  paid_out: MicroAmount,
  settled_batches: Count,
  settled_calls: Count,
  /** Outcomes received and not settled yet. */
  backlog: Count,
  /**
   * Whether the pool covers new calls: paused by an operator (`POST /_admin/v1/pool/pause`) or by
   * itself (free capital below its minimum); calls go on, uncovered, meanwhile.
   */
  coverage: PoolCoverage,
  /** Who owns the capital and what of it is locked (protocol/lps.ts). */
  capital: PoolCapitalView,
});
export type PoolView = z.infer<typeof PoolView>;
/** The pool's figures from the ledger alone, as the store reads them (the admin API adds `coverage` and `capital`). */
export type LedgerPoolView = Omit<PoolView, 'capital' | 'coverage'>;

export const FundPoolRequest = z.object({ amount: Micro, note: plainString('text').trim().min(1).max(500).optional() }).strict();
export type FundPoolRequest = z.infer<typeof FundPoolRequest>;

/** Body of `POST /_admin/v1/pool/pause` and `POST /_admin/v1/pool/resume`: why, published in the changelog. */
export const PoolPauseRequest = z.object({ note: plainString('text').trim().min(1).max(500) }).strict();
export type PoolPauseRequest = z.infer<typeof PoolPauseRequest>;

/**
 * Answer to a manual pause or resume of coverage. `changed` is false when coverage already was
 * as asked: nothing was written then (no audit row, no changelog entry).
 */
export const PoolPauseView = z.strictObject({
  /** Whether coverage is paused by an operator now. */
  paused: z.boolean(),
  /** Whether this request paused or resumed it (false: it already was so). */
  changed: z.boolean(),
  /** The note of this request (trimmed); published in the changelog when `changed`. */
  note: z.string(),
  /** When control made the change, or, when nothing changed, answered. */
  at: IsoTime,
});
export type PoolPauseView = z.infer<typeof PoolPauseView>;

export const FundView = z.strictObject({
  transfer_id: z.number().int().min(1),
  amount: Micro,
  pool: PoolView,
});
export type FundView = z.infer<typeof FundView>;

/** One account's balance; accounts other than `external` never go below zero. */
export const BalanceView = z.strictObject({
  account: z.string(),
  balance: z.number().int(),
});
export type BalanceView = z.infer<typeof BalanceView>;

/** Query of `GET /_admin/v1/ledger/balances`. */
export const BalancesQuery = z.object({
  prefix: z.string().optional().describe('only accounts whose name starts with this (`pool`, `account:`, `account:<id>`, `key:`)'),
});

/** `GET /_admin/v1/ledger/balances`. */
export const BalancesView = z.strictObject({ balances: z.array(BalanceView) });
export type BalancesView = z.infer<typeof BalancesView>;

/** `GET /_admin/v1/ledger/verify`: the first broken invariant, if any. */
export const LedgerVerifyView = z.strictObject({
  ok: z.boolean(),
  /** The first violation found, as a sentence; null when every invariant holds. */
  violation: z.string().nullable(),
  /** The invariants checked, in order. */
  checks: z.array(z.string()),
  counts: z.strictObject({ accounts: Count, transfers: Count, postings: Count, batches: Count, settled_calls: Count }),
});
export type LedgerVerifyView = z.infer<typeof LedgerVerifyView>;

/** What is owed to one wallet (or, with `wallet` null, to accounts without a wallet yet). */
export const PayoutLine = z.strictObject({
  wallet: z.string().nullable(),
  owed: MicroAmount,
  /** The accounts owed (`acc_…` ids and names), oldest first; the field keeps its name. */
  keys: z.array(z.strictObject({ id: z.string(), name: z.string().nullable(), balance: z.number().int() })),
});
export type PayoutLine = z.infer<typeof PayoutLine>;

/** Query of `GET /_admin/v1/payouts`. */
export const PayoutsQuery = z.object({
  wallet: WalletAddress.optional().describe('only what this wallet is owed'),
});

export const PayoutsView = z.strictObject({
  payouts: z.array(PayoutLine),
  total_owed: MicroAmount,
});
export type PayoutsView = z.infer<typeof PayoutsView>;

export const MarkPaidRequest = z.object({ wallet: WalletAddress, amount: Micro, reference: plainString().trim().min(1).max(200) }).strict();
export type MarkPaidRequest = z.infer<typeof MarkPaidRequest>;

export const MarkPaidView = z.strictObject({
  transfer_id: z.number().int().min(1),
  wallet: z.string(),
  amount: Micro,
  reference: z.string(),
  /** How the payment was taken from the wallet's accounts (oldest account first). */
  paid: z.array(z.strictObject({ account_id: z.string(), amount: Micro })),
  /** What the wallet is still owed afterwards. */
  owed: MicroAmount,
});
export type MarkPaidView = z.infer<typeof MarkPaidView>;
