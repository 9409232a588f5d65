/**
 * Prepaid budgets (migration 22, protocol/budgets.ts): what each gateway instance holds of each
 * account's money, and how much more control may give it.
 *
 * An account's money is its balance less what its unsettled prepaid calls reserved. Of that,
 * open gateway instances hold escrows (`granted − returned − spent`, all cumulative); the rest
 * is *free*, and control grants only from free, one account at a time under a lock. A gateway
 * admits only while its own budget (≤ its escrow: it counts its calls before control ingests
 * them) covers the premium, so the premiums admitted on an account never exceed its balance,
 * however many gateways and controls there are:
 *
 *     free = balance − reserved − Σ open escrows ≥ 0 after every grant.
 *
 * How much to grant is `planGrant`: an instance that asked lately (active) may hold its
 * gateway's share of the account's money, the share of every key's limit it enforces
 * (`limits.mode`: in `split`, its weight over the live gateways'; in `per-gateway`, all of it),
 * the rule the limits use; an idle instance's share is 0, so when an active one is left short
 * the idle ones are asked to give theirs back, and the active ones what they hold beyond their
 * share (`askBack`).
 */

/** An instance that asked within this long is active: it shares the account's money. @default 10000 */
export const ACTIVE_MS = 10_000;
/** An instance left short within this long makes control ask the others for their excess. @default 5000 */
export const SHORT_MS = 5_000;

/** One open escrow of an account, with its gateway's weight. */
export interface EscrowRow {
  gateway_id: string;
  instance: string;
  granted: number;
  returned: number;
  spent: number;
  wanted_at: number | null;
  short_at: number | null;
  weight: number;
  /** Its gateway's share of the limits (`gateways.share`); null or 0 when it holds none now. */
  share: number | null;
}

/** An account's money as one statement read it: balance, reservations and its open escrows. */
export interface AccountMoney {
  balance: number;
  reserved: number;
  escrows: EscrowRow[];
}

/** What an escrow holds now. */
export const heldBy = (e: Pick<EscrowRow, 'granted' | 'returned' | 'spent'>): number => Math.max(0, e.granted - e.returned - e.spent);

/** Balance less reservations less every open escrow: what control may still grant (may be negative: a postpaid debt). */
export function freeOf(money: AccountMoney): number {
  let held = 0;
  for (const e of money.escrows) held += heldBy(e);
  return money.balance - money.reserved - held;
}

const isActive = (e: EscrowRow, now: number) => e.wanted_at !== null && e.wanted_at >= now - ACTIVE_MS;

/** The instance asking or reporting, with its gateway's weight and limit share. */
export type Self = Pick<EscrowRow, 'gateway_id' | 'instance' | 'weight' | 'share'>;

/**
 * What `self` should hold of the account: its gateway's limit share of all the account's money
 * that is not reserved (free and held), rounded down; for a gateway without a share now, the
 * active instances (and `self`, which is asking or reporting) divide the free money and what
 * they hold by weight. Nothing when `self` is not active.
 */
function targetOf(money: AccountMoney, self: Self, selfActive: boolean, now: number): number {
  if (!selfActive) return 0;
  if (self.share !== null && self.share > 0) {
    let total = Math.max(0, freeOf(money));
    for (const e of money.escrows) total += heldBy(e);
    return Math.floor(total * self.share);
  }
  let pool = Math.max(0, freeOf(money));
  let weights = 0;
  let selfSeen = false;
  for (const e of money.escrows) {
    const mine = e.gateway_id === self.gateway_id && e.instance === self.instance;
    if (!mine && !isActive(e, now)) continue;
    pool += heldBy(e);
    weights += e.weight;
    selfSeen ||= mine;
  }
  if (!selfSeen) weights += self.weight;
  return weights > 0 ? Math.floor((pool * self.weight) / weights) : 0;
}

/**
 * How much to grant `self`, which wants budget and needs `need` more for a waiting call (0:
 * ahead of need): up to its share, and at least the need, never more than is free. `short` when
 * that is more than is free, a waiting call's need or, ahead of need, its share (control then
 * asks the others to give back).
 */
export function planGrant(money: AccountMoney, self: Self, need: number, now: number): { give: number; short: boolean } {
  const mine = money.escrows.find((e) => e.gateway_id === self.gateway_id && e.instance === self.instance);
  const held = mine ? heldBy(mine) : 0;
  const want = Math.max(targetOf(money, self, true, now) - held, need);
  const give = Math.max(0, Math.min(freeOf(money), want));
  return { give, short: give < want };
}

/**
 * What `self` should give back: nothing unless another open instance of the account was left
 * short lately; then all it holds beyond its share (all of it when it has not asked lately).
 */
export function askBack(money: AccountMoney, self: EscrowRow, now: number): number {
  const someoneShort = money.escrows.some(
    (e) => !(e.gateway_id === self.gateway_id && e.instance === self.instance) && e.short_at !== null && e.short_at >= now - SHORT_MS,
  );
  if (!someoneShort) return 0;
  return Math.max(0, heldBy(self) - targetOf(money, self, isActive(self, now), now));
}

/** An account's money as `/api/v1/account` and payouts see it. */
export interface AccountHolding {
  balance: number;
  /** Premiums its admitted, unsettled prepaid calls reserved. */
  reserved: number;
  /** What open gateway instances hold for it and have not spent. */
  held: number;
}

export interface BudgetsTable {
  /** The account's balance, reservations and open escrows, read in one statement. */
  money(accountId: string): Promise<AccountMoney>;
  /**
   * Grant `instance` of `gateway` what `planGrant` says for `account` (one transaction, the
   * account locked, so no two grants spend the same free money). Answers the instance's
   * granted total, or null when the account does not exist.
   */
  grant(account: string, gateway: string, instance: string, need: number, now: number): Promise<{ granted: number; short: boolean } | null>;
  /**
   * Record that `instance` has given back `returned` in all (the larger of it and what was
   * recorded, at most what it was granted and did not spend), and answer its granted total and
   * what it should give back now. Null when it holds no escrow of `account`.
   */
  report(
    account: string,
    gateway: string,
    instance: string,
    returned: number,
    now: number,
  ): Promise<{ granted: number; ask: number } | null>;
  /** What `instance` was granted of `account` and should give back now, without writing; null when it holds no open escrow of it. */
  standing(account: string, gateway: string, instance: string, now: number): Promise<{ granted: number; ask: number } | null>;
  /** The accounts `instance` holds an open escrow of that another instance was left short of within `SHORT_MS`. */
  shortOf(gateway: string, instance: string, now: number): Promise<string[]>;
  /** Release every open escrow of `gateway`'s instances but `instance`: their journals are drained. Answers how many. */
  release(gateway: string, instance: string, now: number): Promise<number>;
  /** The account's balance, reservations and what gateways hold of it. */
  holding(accountId: string): Promise<AccountHolding>;
}
