/**
 * Accounts (`/_admin/v1/accounts`): who holds prepaid money. Every key belongs to one account;
 * a key issued without one gets an account of its own, named after the key. Amounts are
 * integer micro-units. Shared by control (validates requests) and `svcctl` (sends them, reads
 * answers); field names are stable: `--json` output is built from these views.
 */
import { z } from 'zod';
import { plainString } from './text';
import { IsoTime, MicroAmount, PageCursor, StateVersion, pageLimit } from './wire';

/**
 * An account's name: 1 to 64 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit. Names
 * starting `key_` or `acc_` are the keys' own accounts' (named after their key) and ids'.
 */
export const ACCOUNT_NAME_RULE = '1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit, not key_ or acc_';
/** The characters of any stored account name, the keys' own accounts' (`key_…`) included. */
export const ACCOUNT_NAME_CHARS = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const AccountName = z
  .string()
  .regex(ACCOUNT_NAME_CHARS, { message: `must be ${ACCOUNT_NAME_RULE}` })
  .refine((name) => !/^(key|acc)_/.test(name), { message: `must be ${ACCOUNT_NAME_RULE}` });

/** An account as a request names it: its id (`acc_…`) or its name. */
export const AccountRef = z.string().min(1).max(68);

/** Accounts per page of `GET /_admin/v1/accounts` when `limit` is not given. @default 100 */
export const ACCOUNT_LIST_DEFAULT_LIMIT = 100;
/** Most accounts one page may hold. @default 1000 */
export const ACCOUNT_LIST_MAX_LIMIT = 1000;

/** Body of `POST /_admin/v1/accounts`. */
export const CreateAccountRequest = z.strictObject({
  name: AccountName,
  /** Low-balance threshold: the account shows `low` while its available balance is under it. */
  low: MicroAmount.optional(),
});
export type CreateAccountRequest = z.infer<typeof CreateAccountRequest>;

/** How often a refill rule refills: at the start of every UTC day, or of every month's refill day. */
export const RefillEvery = z.enum(['day', 'month']);

/**
 * The refill rule of an account: its available balance brought up to `amount` (external →
 * account, nothing when it is there already) once a period, every UTC day or every month on
 * `day` (the month's last day when it is shorter; null: the 1st), and once when the rule is set.
 */
export const RefillView = z.strictObject({
  amount: MicroAmount,
  every: RefillEvery,
  day: z.number().int().min(1).max(31).nullable(),
  /** Who set the rule: each refill is recorded under their name. */
  set_by: z.string(),
  /** When the next period begins: its refill is made then (within a minute). */
  next_at: IsoTime,
});
export type RefillView = z.infer<typeof RefillView>;

export const AccountView = z.strictObject({
  id: z.string(),
  name: z.string(),
  /** Where the account's refunds are paid out, if anywhere yet. */
  wallet: z.string().nullable(),
  /** The ledger balance of `account:<id>` (micro-units); negative while it owes premiums. */
  balance: z.number().int(),
  low: MicroAmount.nullable(),
  refill: RefillView.nullable(),
  /** Keys that belong to the account, revoked ones included. */
  keys: z.number().int().min(0),
  created_at: IsoTime,
  created_by: z.string(),
});
export type AccountView = z.infer<typeof AccountView>;

/** What adding an account answers: the account and the state version that recorded it. */
export const AccountChange = AccountView.extend({ version: StateVersion });
export type AccountChange = z.infer<typeof AccountChange>;

/** Query of `GET /_admin/v1/accounts`: a page by name; `cursor` is the previous answer's `next_cursor`. */
export const AccountListQuery = z.strictObject({
  limit: pageLimit('accounts', ACCOUNT_LIST_MAX_LIMIT, ACCOUNT_LIST_DEFAULT_LIMIT),
  cursor: PageCursor,
});
export type AccountListQuery = z.infer<typeof AccountListQuery>;

/** Answer of `GET /_admin/v1/accounts`: one page, by name; `next_cursor` null on the last page. */
export const AccountList = z.strictObject({ accounts: z.array(AccountView), next_cursor: z.string().nullable() });
export type AccountList = z.infer<typeof AccountList>;

/** A deposit reference: the operator's own (a bank transfer's, an invoice's), 1 to 200 characters of plain text, trimmed. */
export const DepositReference = plainString().trim().min(1).max(200);

/** Body of `POST /_admin/v1/accounts/{id}/deposit`: integer micro-units ≥ 1, and the reference that makes it one deposit. */
export const DepositRequest = z.strictObject({
  amount: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  reference: DepositReference,
});
export type DepositRequest = z.infer<typeof DepositRequest>;

/**
 * What a deposit answers: `201` with `created: true` when it moved the money (external →
 * `account:<id>`); `200` with the first deposit's `transfer_id` and `created: false` when the
 * reference was recorded before with the same account and amount (nothing moved).
 */
export const DepositView = z.strictObject({
  transfer_id: z.number().int().min(1),
  account_id: z.string(),
  amount: z.number().int().min(1),
  reference: z.string(),
  /** The account's ledger balance afterwards (micro-units). */
  balance: z.number().int(),
  created: z.boolean(),
  /** The state version that tells gateways the account was funded (`--wait` waits for it). */
  version: StateVersion,
});
export type DepositView = z.infer<typeof DepositView>;

const REFILL_FIELDS = {
  /** What the available balance is brought up to, in integer micro-units ≥ 1. */
  amount: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  every: RefillEvery,
  /** For `every: month`: the day of the month, 1 to 31 (the month's last day when it is shorter); default 1. */
  day: z.number().int().min(1).max(31).optional(),
};
const dayIsMonthly = (rule: { every: 'day' | 'month'; day?: number | undefined }, ctx: z.RefinementCtx): void => {
  if (rule.day !== undefined && rule.every !== 'month')
    ctx.addIssue({ code: 'custom', path: ['day'], message: 'is only for every: month' });
};

/** Body of `PUT /_admin/v1/accounts/{id}/refill`: the account's refill rule, replacing any before. */
export const RefillRequest = z.strictObject(REFILL_FIELDS).superRefine(dayIsMonthly);
export type RefillRequest = z.infer<typeof RefillRequest>;

/** A refill rule set, as the request records it (`accounts.refill.set`): the account's id and the rule. */
export const RefillAction = z.strictObject({ id: z.string().min(1), ...REFILL_FIELDS }).superRefine(dayIsMonthly);

/** One period's refill, as the account's refill answers show it. */
export const RefillRecord = z.strictObject({
  /** `2026-11-29` (a daily rule) or `2026-11` (a monthly one). */
  period: z.string(),
  /** The rule's amount then: what the balance was brought up to. */
  target: MicroAmount,
  /** What moved, external → account; 0 when the balance was at or over the target already. */
  amount: z.number().int().min(0),
  /** The `refill` transfer (reference `refill:<account id>:<period>`), or null when nothing moved. */
  transfer_id: z.number().int().min(1).nullable(),
  at: IsoTime,
});
export type RefillRecord = z.infer<typeof RefillRecord>;

/** What setting a refill rule answers: the account, the state version, and the current period's refill (made at once). */
export const RefillChange = AccountChange.extend({ refilled: RefillRecord.nullable() });
export type RefillChange = z.infer<typeof RefillChange>;

/** Body of `PATCH /_admin/v1/accounts/{id}`: the low-balance threshold (null: none). */
export const UpdateAccountRequest = z.strictObject({
  low: MicroAmount.nullable(),
});
export type UpdateAccountRequest = z.infer<typeof UpdateAccountRequest>;
