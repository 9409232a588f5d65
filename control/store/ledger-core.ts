/**
 * The ledger's rules apart from SQL, shared by every store (`ledger.ts` on SQLite,
 * `pg/ledger.ts` on PostgreSQL): what a transfer must look like, how a payout is taken from a
 * wallet's keys, and how the figures read become the pool view, the payout lines and the
 * indexer's totals.
 */
import type { Outcome } from '../../protocol/outcome';
import { keyAccount, type Clamp, type PayoutLine, type PoolView } from '../../protocol/settlement';
import { CodedError } from '../../protocol/coded-error';

export type TransferKind = 'fund' | 'premium' | 'treasury_fee' | 'refund' | 'payout';

export interface Posting {
  account: string;
  /** + credits the account, − debits it; never 0. */
  amount: number;
}

export interface TransferInput {
  kind: TransferKind;
  at: number;
  actor: string;
  postings: Posting[];
  callId?: string | null;
  batchId?: number | null;
  reference?: string | null;
}

/** A ledger rule a request would break; the admin API answers 409 with the message. */
export class LedgerError extends CodedError {
  override readonly code = 'SVC_ERR_LEDGER';
  constructor(
    readonly reason: 'unbalanced' | 'nothing_owed' | 'over_owed' | 'duplicate_reference',
    message: string,
  ) {
    super(message);
  }
}

/** The indexer's aggregate numbers (docs/design.md §7), read in one transaction. Money in micro-units. */
export interface LedgerTotals {
  /** Balance of the pool account. */
  pool_size: number;
  /** Settlement batches committed. */
  settled_batches: number;
  /** Outcomes settled (each exactly once). */
  settled_calls: number;
  /** Outcomes received and not settled yet. */
  unsettled_calls: number;
  /** Every outcome control holds: settled + unsettled. */
  total_calls: number;
  /** Premiums collected (key → pool), before the treasury fee. */
  total_premiums: number;
  /** Refunds paid (pool → key), after clamping. */
  total_refunds: number;
  /** Refunds owed before clamping; minus `total_refunds` is the shortfall. */
  total_refunds_owed: number;
  total_treasury_fees: number;
}

/** One recorded call as stored, with its settlement fields. */
export interface ActivityRow {
  call_id: string;
  endpoint_id: string;
  outcome: Outcome;
  status: number;
  latency_ms: number;
  started_at: number;
  premium: number | null;
  refund: number | null;
  refund_owed: number | null;
  clamp: Clamp | null;
  settled_batch: number | null;
}

/** A settled call: the settler writes its batch and amounts together. */
export type SettledActivityRow = ActivityRow & { premium: number; refund: number; refund_owed: number; settled_batch: number };

/** A key account with a positive balance, with its key (oldest key first). */
export interface PayoutRow {
  id: string;
  name: string | null;
  wallet: string | null;
  balance: number;
}

/** The `settlement_batches` sums `totals()` reads. */
export interface BatchTotalsRow {
  batches: number;
  calls: number;
  premiums: number;
  treasury_fees: number;
  refunds: number;
  refunds_owed: number;
}

/** What `poolView()` reads besides the totals. */
export interface PoolParts {
  treasury: number;
  funded: number;
  clamped: { clamp: Clamp; n: number }[];
  owed_to_keys: number;
  paid_out: number;
}

/** EVM addresses are case-insensitive (the case is only a checksum); Solana's are not. */
const walletKey = (wallet: string): string => (wallet.startsWith('0x') ? wallet.toLowerCase() : wallet);

/**
 * Throws `LedgerError('unbalanced')` unless `input`'s postings are safe integers, non-zero,
 * on distinct accounts (at least two), and sum to zero. Every store checks each transfer
 * with it, in the transaction that writes it.
 */
export function checkTransfer(input: TransferInput): void {
  let sum = 0;
  const accounts = new Set<string>();
  for (const p of input.postings) {
    if (!Number.isSafeInteger(p.amount) || p.amount === 0 || accounts.has(p.account)) {
      throw new LedgerError('unbalanced', `transfer ${input.kind}: bad posting ${p.account} ${p.amount}`);
    }
    accounts.add(p.account);
    sum += p.amount;
  }
  if (sum !== 0 || accounts.size < 2) throw new LedgerError('unbalanced', `transfer ${input.kind}: postings sum to ${sum}`);
}

/** A funding: external → pool. */
export function fundTransfer(amount: number, at: number, actor: string, note: string | null): TransferInput {
  return {
    kind: 'fund',
    at,
    actor,
    reference: note,
    postings: [
      { account: 'external', amount: -amount },
      { account: 'pool', amount },
    ],
  };
}

/** `markPaid`'s refusal of a reference an earlier payout used. */
export const duplicateReference = (reference: string): LedgerError =>
  new LedgerError('duplicate_reference', `a payout with reference ${JSON.stringify(reference)} is already recorded`);

/**
 * A payout of `amount` to `wallet`, given the wallet's payout lines (`payouts(wallet)`): taken
 * from its keys oldest first, never more than they hold together. Throws `LedgerError` when
 * nothing is owed or the amount is more than owed.
 */
export function payoutOf(
  lines: readonly PayoutLine[],
  wallet: string,
  amount: number,
): { paid: { key_id: string; amount: number }[]; postings: Posting[]; owed: number } {
  const owed = lines[0]?.owed ?? 0;
  if (owed === 0) throw new LedgerError('nothing_owed', `nothing is owed to ${wallet}`);
  if (amount > owed) throw new LedgerError('over_owed', `${amount} is more than the ${owed} owed to ${wallet}`);
  const paid: { key_id: string; amount: number }[] = [];
  let left = amount;
  for (const key of lines[0]!.keys) {
    if (left === 0) break;
    const take = Math.min(left, key.balance);
    paid.push({ key_id: key.id, amount: take });
    left -= take;
  }
  const postings: Posting[] = paid.map((p) => ({ account: keyAccount(p.key_id), amount: -p.amount }));
  postings.push({ account: 'external', amount });
  return { paid, postings, owed: owed - amount };
}

/**
 * The payout lines of `rows` (key accounts with a positive balance, oldest key first): one per
 * wallet plus one (wallet null) for keys without one, or only `wallet`'s line.
 */
export function payoutLines(rows: readonly PayoutRow[], wallet?: string): PayoutLine[] {
  const want = wallet === undefined ? undefined : walletKey(wallet);
  const lines = new Map<string | null, PayoutLine>();
  for (const row of rows) {
    const group = row.wallet === null ? null : walletKey(row.wallet);
    if (want !== undefined && group !== want) continue;
    let line = lines.get(group);
    if (line === undefined) lines.set(group, (line = { wallet: row.wallet, owed: 0, keys: [] }));
    line.owed += row.balance;
    line.keys.push({ id: row.id, name: row.name, balance: row.balance });
  }
  return [...lines.values()].sort((a, b) => (a.wallet === null ? 1 : b.wallet === null ? -1 : a.wallet < b.wallet ? -1 : 1));
}

/** The indexer's totals from the batches' sums, the unsettled count and the pool's balance. */
export function ledgerTotals(b: BatchTotalsRow, unsettled: number, pool: number): LedgerTotals {
  return {
    pool_size: pool,
    settled_batches: b.batches,
    settled_calls: b.calls,
    unsettled_calls: unsettled,
    total_calls: b.calls + unsettled,
    total_premiums: b.premiums,
    total_refunds: b.refunds,
    total_refunds_owed: b.refunds_owed,
    total_treasury_fees: b.treasury_fees,
  };
}

/** `svcctl pool show`'s view from the totals and the rest it reads. */
export function poolViewOf(t: LedgerTotals, parts: PoolParts): PoolView {
  const clamped = { pool_depleted: 0, cap_clamped: 0 };
  for (const row of parts.clamped) clamped[row.clamp] = row.n;
  return {
    pool: t.pool_size,
    treasury: parts.treasury,
    funded: parts.funded,
    premiums: t.total_premiums,
    treasury_fees: t.total_treasury_fees,
    refunds: t.total_refunds,
    refunds_owed: t.total_refunds_owed,
    shortfall: t.total_refunds_owed - t.total_refunds,
    clamped,
    owed_to_keys: parts.owed_to_keys,
    paid_out: parts.paid_out,
    settled_batches: t.settled_batches,
    settled_calls: t.settled_calls,
    backlog: t.unsettled_calls,
  };
}
