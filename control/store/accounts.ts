/**
 * Accounts (migration 20): who holds prepaid money. Every key belongs to one account, set when
 * the key is issued and never changed; several keys may share one. An account's balance is the
 * ledger account `account:<id>` (`ledger.ts`). Names are unique and what operators type; ids are
 * what the ledger, the keys and the gateways use.
 */

export interface AccountRow {
  id: string;
  name: string;
  wallet: string | null;
  /** Low-balance threshold (micro-units), or null for none. */
  low: number | null;
  refill_amount: number | null;
  refill_every: 'day' | 'month' | null;
  refill_day: number | null;
  /** The operator who set the refill rule: each refill is recorded under their name. */
  refill_by: string | null;
  created_at: number;
  created_by: string;
}

/** An account with what its list and show answer beside the row: its keys and its ledger balance. */
export interface AccountSummary extends AccountRow {
  keys: number;
  balance: number;
}

export interface NewAccount {
  id: string;
  name: string;
  low: number | null;
  created_at: number;
  created_by: string;
}

/** An account's refill rule: up to `amount` every day, or every month on `day` (null: the 1st). */
export interface RefillRule {
  amount: number;
  every: 'day' | 'month';
  day: number | null;
}

/** One period's refill of an account (`account_refills`), as recorded by the control that made it. */
export interface RefillRow {
  account_id: string;
  /** `2026-11-29` (a daily rule) or `2026-11` (a monthly one). */
  period: string;
  /** The rule's amount then: what the available balance was brought up to. */
  target: number;
  /** What moved (external → account); 0 when the balance was already at or over the target. */
  amount: number;
  /** The `refill` transfer (reference `refill:<account>:<period>`), or null when nothing moved. */
  transfer_id: number | null;
  at: number;
}

/** A refill as `AccountsTable.refill` answers it: `created` false when the period was refilled before. */
export interface Refill extends RefillRow {
  created: boolean;
}

const DAY_MS = 86_400_000;
const pad = (n: number): string => String(n).padStart(2, '0');
/** The day of month `month` (0-based, of `year`) a monthly rule on `day` refills: the month's last when it is shorter. */
const dueDay = (year: number, month: number, day: number | null): number =>
  Math.min(day ?? 1, new Date(Date.UTC(year, month + 1, 0)).getUTCDate());

/**
 * The period of `rule` that `at` falls in, in UTC: its label (`2026-11-29` for a daily rule;
 * `2026-11` for a monthly one, the month whose refill day began it) and when it began and ends.
 */
export function refillPeriod(rule: Pick<RefillRule, 'every' | 'day'>, at: number): { period: string; start: number; end: number } {
  const d = new Date(at);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth();
  if (rule.every === 'day') {
    const start = Date.UTC(year, month, d.getUTCDate());
    return { period: `${year}-${pad(month + 1)}-${pad(d.getUTCDate())}`, start, end: start + DAY_MS };
  }
  // The period began this month when this month's refill day has come, else last month.
  const thisMonth = d.getUTCDate() >= dueDay(year, month, rule.day);
  const [y, m] = thisMonth ? [year, month] : month === 0 ? [year - 1, 11] : [year, month - 1];
  const [ny, nm] = m === 11 ? [y + 1, 0] : [y, m + 1];
  return {
    period: `${y}-${pad(m + 1)}`,
    start: Date.UTC(y, m, dueDay(y, m, rule.day)),
    end: Date.UTC(ny, nm, dueDay(ny, nm, rule.day)),
  };
}

/** A refill's transfer reference: once per account and period (`ledger_refill_reference`). */
export const refillReference = (accountId: string, period: string): string => `refill:${accountId}:${period}`;

/** Accounts per page of the list when no limit is given. @default 100 */
export const ACCOUNT_PAGE = 100;

/** The ledger account that holds an account's balance. */
export const accountLedger = (accountId: string): string => `account:${accountId}`;

export interface AccountsTable {
  insert(account: NewAccount): Promise<void>;
  byId(id: string): Promise<AccountRow | undefined>;
  byName(name: string): Promise<AccountRow | undefined>;
  /** The account `ref` names: its id when one has it, else its name. */
  byRef(ref: string): Promise<AccountRow | undefined>;
  /** The account with its key count and balance. */
  summary(id: string): Promise<AccountSummary | undefined>;
  /** Up to `limit` accounts after the name `after` (null: from the first), by name. */
  page(after: string | null, limit: number): Promise<AccountSummary[]>;
  /** Set the low-balance threshold (null: none). */
  setLow(id: string, low: number | null): Promise<void>;
  /**
   * Attach the payout wallet (null: detach). Each key of the account shows it too: `keys.wallet`
   * mirrors its account's (what the key's view shows), set here in the same transaction.
   */
  setWallet(id: string, wallet: string | null): Promise<void>;
  /** Set the refill rule (null: none) as operator `by`. */
  setRefill(id: string, rule: RefillRule | null, by: string): Promise<void>;
  /** Up to `limit` accounts with a refill rule after the id `after` (null: from the first), by id. */
  withRefill(after: string | null, limit: number): Promise<AccountRow[]>;
  /** The refill of account `id` for `period`, if it was made. */
  refillOf(id: string, period: string): Promise<RefillRow | undefined>;
  /**
   * Refill account `id` under its rule for the period `at` falls in, inside `Store.mutate`:
   * external → `account:<id>` of what brings its balance up to the rule's amount (nothing when
   * it is there already), recorded once per period (`account_refills`' primary key) under the
   * rule's operator. Answers the period's refill (`created: false` when it was made before),
   * or null when the account has no rule.
   */
  refill(id: string, at: number): Promise<Refill | null>;
}
