/**
 * Settlement views shared by control's settler, the status page, the indexer and `svcctl`.
 * Amounts are integers in micro-units (6 decimals).
 */
import { z } from 'zod';
import { plainString } from './text';
import { WalletAddress } from './wallet';

export type SettlerState = 'running' | 'idle' | 'paused';

export interface SettlerStatus {
  /** `running` while a batch is being committed, `idle` between runs, `paused` by an operator. */
  state: SettlerState;
  cadence_ms: number;
  batch_cap: number;
  /** Outcomes received and not yet settled. */
  backlog: number;
  /** Age of the oldest unsettled outcome, ms (null when the backlog is empty). */
  lag_ms: number | null;
  last_run_at: string | null;
  last_batch: { id: number; endpoint_id: string; calls: number; refunds: number; premiums: number; at: string } | null;
  last_error: string | null;
}

// ---------------------------------------------------------------------------------------
// Ledger, pool, payouts (admin API shapes; see control/store/ledger.ts)

/** Accounts of the ledger: `external`, `pool`, `treasury`, and `key:<key id>` per key. */
export const FIXED_ACCOUNTS = ['external', 'pool', 'treasury'] as const;
export const keyAccount = (keyId: string): string => `key:${keyId}`;

/** Why a refund was paid short: the pool could not cover it, or the endpoint's hourly cap was reached. */
export type Clamp = 'pool_depleted' | 'cap_clamped';

const Micro = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

/** One settlement batch: one endpoint, up to `settler.batchCap` calls, committed in one transaction. */
export interface BatchView {
  id: number;
  endpoint_id: string;
  created_at: string;
  calls: number;
  premiums: number;
  treasury_fees: number;
  /** Refunds paid. */
  refunds: number;
  /** Refunds owed before clamping; `refunds_owed - refunds` is this batch's shortfall. */
  refunds_owed: number;
  clamped_calls: number;
}

/** Answer to `POST /_admin/v1/settler/run-once`. */
export interface RunOnceView {
  batches: BatchView[];
  calls: number;
  premiums: number;
  treasury_fees: number;
  refunds: number;
  refunds_owed: number;
  clamped_calls: number;
  /** Outcomes still unsettled afterwards (received after the run started). */
  backlog: number;
}

/** `GET /_admin/v1/pool`: the pool, what it took in and paid out, and what it could not pay. */
export interface PoolView {
  /** Balance of the pool account. */
  pool: number;
  treasury: number;
  /** Everything funded into the pool (external → pool). */
  funded: number;
  premiums: number;
  treasury_fees: number;
  refunds: number;
  refunds_owed: number;
  /** `refunds_owed - refunds`: refunds clamped away, recorded per call, never paid. */
  shortfall: number;
  clamped: { pool_depleted: number; cap_clamped: number };
  /** Sum of positive key balances: what payouts would pay now. */
  owed_to_keys: number;
  /** Everything recorded as paid out (key → external). */
  paid_out: number;
  settled_batches: number;
  settled_calls: number;
  /** Outcomes received and not settled yet. */
  backlog: number;
}

export const FundPoolRequest = z.object({ amount: Micro, note: plainString('text').trim().min(1).max(500).optional() }).strict();
export type FundPoolRequest = z.infer<typeof FundPoolRequest>;

export interface FundView {
  transfer_id: number;
  amount: number;
  pool: PoolView;
}

export interface BalanceView {
  account: string;
  balance: number;
}

/** `GET /_admin/v1/ledger/verify`: the first broken invariant, if any. */
export interface LedgerVerifyView {
  ok: boolean;
  /** The first violation found, as a sentence; null when every invariant holds. */
  violation: string | null;
  /** The invariants checked, in order. */
  checks: string[];
  counts: { accounts: number; transfers: number; postings: number; batches: number; settled_calls: number };
}

/** What is owed to one wallet (or, with `wallet` null, to keys without a wallet yet). */
export interface PayoutLine {
  wallet: string | null;
  owed: number;
  keys: { id: string; name: string | null; balance: number }[];
}

export interface PayoutsView {
  payouts: PayoutLine[];
  total_owed: number;
}

export const MarkPaidRequest = z
  .object({ wallet: WalletAddress, amount: Micro, reference: plainString().trim().min(1).max(200) })
  .strict();
export type MarkPaidRequest = z.infer<typeof MarkPaidRequest>;

export interface MarkPaidView {
  transfer_id: number;
  wallet: string;
  amount: number;
  reference: string;
  /** How the payment was taken from the wallet's keys (oldest key first). */
  paid: { key_id: string; amount: number }[];
  /** What the wallet is still owed afterwards. */
  owed: number;
}
