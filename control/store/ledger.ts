/**
 * The ledger table family (migrations 3 and 6), as callers see it: double-entry transfers
 * whose postings sum to zero, the running balance of every account, pool funding, payouts, and
 * the numbers the pool view and the indexer report; and its rules apart from SQL (a transfer's
 * shape, a payout's split, the views), which every store applies in the transaction that
 * writes. Its one implementation is `sql/ledger.ts`; the invariant checks are
 * `sql/ledger-verify.ts`.
 *
 * Accounts: `external` (money entering or leaving svc), `pool`, `treasury`, `account:<account
 * id>` (what the settler and payouts post to since migration 21), and `key:<key id>` (what they
 * posted to before; migration 21 moved each key's balance to its account).
 * A posting credits (+) or debits (−) one account; amounts are integer micro-units. Writers
 * must run inside a transaction (`Store.mutate`, or the settler's batch transaction).
 */
import type { Outcome } from '../../protocol/outcome';
import {
  type BalanceView,
  type Clamp,
  type LedgerVerifyView,
  type MarkPaidView,
  type PayoutLine,
  type LedgerPoolView,
} from '../../protocol/settlement';
import { CodedError } from '../../protocol/coded-error';
import { accountLedger } from './accounts';

/**
 * `deposit` and `refill`: external → `account:<id>`; `move`: a key's balance to its account
 * (`key:<id>` → `account:<id>`, written only by migration 21, either sign); `fund` and
 * `lp_deposit`: external → pool, minting a provider's shares; `lp_withdrawal`: pool → external,
 * one payment of a provider's withdrawal.
 */
export type TransferKind =
  'fund' | 'premium' | 'treasury_fee' | 'refund' | 'payout' | 'deposit' | 'move' | 'refill' | 'lp_deposit' | 'lp_withdrawal';

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
    readonly reason: 'unbalanced' | 'nothing_owed' | 'over_owed' | 'duplicate_reference' | 'reference_used',
    message: string,
  ) {
    super(message);
  }
}

/** A deposit as `LedgerTable.deposit` answers it: the first one recorded under its reference. */
export interface Deposit {
  transfer_id: number;
  account_id: string;
  amount: number;
  reference: string;
  /** The account's balance after the deposit (or now, for one recorded before). */
  balance: number;
  /** False when the reference was recorded before, with this account and amount: nothing moved. */
  created: boolean;
}

/** The ledger, as `Store.ledger` and every transaction's tables have it. */
export interface LedgerTable {
  /**
   * Record one transfer: its row, its postings and the balances they move. Throws
   * `LedgerError('unbalanced')` unless the postings are non-zero, on distinct accounts, and
   * sum to zero. Inside a transaction; answers the transfer id.
   */
  transfer(input: TransferInput): Promise<number>;
  /** external → pool, a deposit into the built-in provider `operator`'s position (`LpsTable.deposit`). Inside `Store.mutate`. */
  fund(amount: number, at: number, actor: string, note: string | null): Promise<number>;
  /**
   * Record an operator's deposit of `amount` into account `accountId` under `reference`
   * (external → `account:<id>`), inside `Store.mutate`. A reference is one deposit: the same
   * reference with the same account and amount answers the first deposit (`created: false`)
   * and moves nothing; with another account or amount it throws `LedgerError('reference_used')`.
   */
  deposit(accountId: string, amount: number, reference: string, at: number, actor: string): Promise<Deposit>;
  /**
   * Record an external payment to `wallet`: accounts → external, taken from the wallet's
   * accounts with a positive balance, oldest account first, never more than they hold together.
   * Inside `Store.mutate` (called outside one, it takes the writer lock itself). Throws
   * `LedgerError` when nothing is owed, the amount is more than owed, or the reference was
   * used by an earlier payout.
   */
  markPaid(wallet: string, amount: number, reference: string, at: number, actor: string): Promise<MarkPaidView>;
  /** Balance of one account (0 for an account that never moved). */
  balance(account: string): Promise<number>;
  /** Every account with its balance, or those starting with `prefix`. */
  balances(prefix?: string): Promise<BalanceView[]>;
  /**
   * What is owed per wallet: the positive balances of the accounts whose wallet it is, plus one
   * line (wallet null) for accounts without a wallet yet. With `wallet`, only that wallet's line
   * (EVM addresses match case-insensitively). Accounts within a line (its `keys`, a name the
   * wire keeps) are oldest first.
   */
  payouts(wallet?: string): Promise<PayoutLine[]>;
  /** What `svcctl pool show` prints: balances, flows, clamps and the shortfall, from one snapshot. */
  poolView(): Promise<LedgerPoolView>;
  /** Check every ledger invariant against committed state, in one read snapshot (`sql/ledger-verify.ts`). */
  verify(): Promise<LedgerVerifyView>;
  // For the indexer (docs/design.md §7); each reads committed state.
  /** Balance of the pool, micro-units. */
  poolSize(): Promise<number>;
  /** Number of settlement batches committed. */
  settledBatches(): Promise<number>;
  /** Refunds paid over all batches (after clamping), micro-units. */
  totalRefunds(): Promise<number>;
  /** Premiums collected over all batches (before the treasury fee), micro-units. */
  totalPremiums(): Promise<number>;
  /** Every outcome control holds, settled or not. */
  totalCalls(): Promise<number>;
  /** All the aggregate numbers at once, from one consistent read. */
  totals(): Promise<LedgerTotals>;
  /**
   * The last `limit` settled calls (docs/design.md §7): the calls of the latest settlement
   * batches, newest batch first and, within a batch, newest call first. Calls not settled yet
   * are not here (the indexer pages through them in `/api/activity`). Ids are as stored: map
   * them to public opaque ids before publishing.
   */
  recentActivity(limit: number): Promise<SettledActivityRow[]>;
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
  /** Of them, the calls gateways admitted uncovered (the pool paused): they move no money. */
  uncovered_calls: number;
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

/**
 * A payout of `amount` to `wallet`, given the wallet's payout lines (`payouts(wallet)`): taken
 * from its accounts oldest first, never more than they hold together. Throws `LedgerError`
 * when nothing is owed or the amount is more than owed.
 */
export function payoutOf(
  lines: readonly PayoutLine[],
  wallet: string,
  amount: number,
): { paid: { account_id: string; amount: number }[]; postings: Posting[]; owed: number } {
  const owed = lines[0]?.owed ?? 0;
  if (owed === 0) throw new LedgerError('nothing_owed', `nothing is owed to ${wallet}`);
  if (amount > owed) throw new LedgerError('over_owed', `${amount} is more than the ${owed} owed to ${wallet}`);
  const paid: { account_id: string; amount: number }[] = [];
  let left = amount;
  for (const account of lines[0]!.keys) {
    if (left === 0) break;
    const take = Math.min(left, account.balance);
    paid.push({ account_id: account.id, amount: take });
    left -= take;
  }
  const postings: Posting[] = paid.map((p) => ({ account: accountLedger(p.account_id), amount: -p.amount }));
  postings.push({ account: 'external', amount });
  return { paid, postings, owed: owed - amount };
}

/**
 * The payout lines of `rows` (accounts with a positive balance, oldest account first): one per
 * wallet plus one (wallet null) for accounts without one, or only `wallet`'s line.
 */
export function payoutLines(
  rows: readonly { id: string; name: string | null; wallet: string | null; balance: number }[],
  wallet?: string,
): PayoutLine[] {
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
