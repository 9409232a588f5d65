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
}
