/**
 * The pool's share checks `ledger verify` runs (`sql/ledger-verify.ts`), recomputed from the
 * postings: every share event's figures are the pool's balance and the shares outstanding
 * before its transfer, its shares are what the rounding rules of `lps.ts` give for them, each
 * withdrawal left the pool at or above the capital locked when it was paid, and the positions
 * are worth the capital within the rounding. Read in the verifying transaction: the pool's
 * postings in transfer order (linear in them, like the running-balance check) and the share
 * events, which are few.
 */
import { sql, type Conn } from './conn';
import { burnShares, mintShares, valueOf, type ShareEventRow } from './lps';

const Q = {
  // ledger_postings_by_account: the pool's postings, in transfer order.
  pool: sql(`SELECT transfer_id, amount FROM ledger_postings WHERE account = 'pool' ORDER BY transfer_id`, { walks: true }),
  events: sql(
    `SELECT id, provider_id, kind, shares, amount, capital_before, shares_before, before_transfer, transfer_id, withdrawal_id,
            exposure, locked, at FROM lp_share_events ORDER BY id`,
    { walks: true },
  ),
  positions: sql(`SELECT id, shares FROM liquidity_providers WHERE shares > 0`, { walks: true }),
};

/**
 * `ledger verify`'s probes of the positions: each query's first row, if any, is a violation,
 * and `message` says which. Each provider's shares are the sum of its share events, and each
 * event names the transfer that moved its money, every such transfer since the opening position
 * has its event, and each withdrawal's `paid` is the sum of its payments.
 */
export const POSITION_PROBES: readonly { sql: string; message: (row: Record<string, string | number | null>) => string }[] = [
  {
    sql: `SELECT count(*) AS n FROM lp_share_events WHERE kind = 'migration' HAVING count(*) <> 1`,
    message: (r) => `${r.n} opening positions of the pool's capital; there is one`,
  },
  {
    sql: `SELECT e.id, e.kind, t.kind AS transfer_kind, p.amount FROM lp_share_events e
                LEFT JOIN ledger_transfers t ON t.id = e.transfer_id
                LEFT JOIN ledger_postings p ON p.transfer_id = e.transfer_id AND p.account = 'pool'
              WHERE e.transfer_id IS NOT NULL AND (t.id IS NULL OR p.amount IS NULL
                 OR e.kind = 'deposit' AND (t.kind NOT IN ('fund', 'lp_deposit') OR p.amount <> e.amount)
                 OR e.kind = 'withdrawal' AND (t.kind <> 'lp_withdrawal' OR p.amount <> -e.amount))
              LIMIT 1`,
    message: (r) =>
      `share event ${r.id} (${r.kind}) of ${r.amount ?? 'no'} names a ${r.transfer_kind ?? 'missing'} transfer that does not move it`,
  },
  {
    // Every transfer of capital since the opening position minted or burned shares.
    sql: `SELECT t.id, t.kind FROM ledger_transfers t
              WHERE t.kind IN ('fund', 'lp_deposit', 'lp_withdrawal')
                AND t.id >= (SELECT min(m.before_transfer) FROM lp_share_events m WHERE m.kind = 'migration')
                AND NOT EXISTS (SELECT 1 FROM lp_share_events e WHERE e.transfer_id = t.id)
              LIMIT 1`,
    message: (r) => `${r.kind} transfer ${r.id} moved the pool's capital without a share event`,
  },
  {
    sql: `SELECT p.id, p.shares, coalesce(e.total, 0) AS total FROM liquidity_providers p
                LEFT JOIN (SELECT provider_id, sum(shares) AS total FROM lp_share_events GROUP BY provider_id) AS e ON e.provider_id = p.id
              WHERE p.shares <> coalesce(e.total, 0) LIMIT 1`,
    message: (r) => `provider ${r.id} holds ${r.shares} shares; its share events add up to ${r.total}`,
  },
  {
    sql: `SELECT w.id, w.paid, coalesce(e.total, 0) AS total FROM lp_withdrawals w
                LEFT JOIN (SELECT withdrawal_id, sum(amount) AS total, min(provider_id) AS p1, max(provider_id) AS p2
                           FROM lp_share_events WHERE kind = 'withdrawal' GROUP BY withdrawal_id) AS e ON e.withdrawal_id = w.id
              WHERE w.paid <> coalesce(e.total, 0) OR e.p1 <> w.provider_id OR e.p2 <> w.provider_id
                 OR w.amount IS NOT NULL AND w.paid > w.amount
              LIMIT 1`,
    message: (r) => `withdrawal ${r.id} records ${r.paid} paid; its payments add up to ${r.total}`,
  },
];

/** The pool's balance over the transfers before each id asked, from its postings in order. */
class PoolWalk {
  private at = 0;
  private balance = 0;
  constructor(private readonly postings: readonly [number, number][]) {}

  /** The pool's balance over the transfers with ids below `transfer` (asked in order). */
  before(transfer: number): number {
    while (this.at < this.postings.length && this.postings[this.at]![0] < transfer) this.balance += this.postings[this.at++]![1];
    return this.balance;
  }

  /** Its balance over every posting. */
  end(): number {
    return this.before(Number.MAX_SAFE_INTEGER);
  }
}

/** What event `e` should have moved, given the provider's shares `held` before it; null when it did. */
function eventProblem(e: ShareEventRow, held: number): string | null {
  const C = e.capital_before;
  const S = e.shares_before;
  switch (e.kind) {
    case 'migration':
    case 'unowned':
      return S === 0 && e.shares === C && e.amount === C ? null : `gives ${e.shares} shares for capital ${C} with ${S} outstanding`;
    case 'write_off':
      return C <= 0 && e.shares === -held && e.amount === 0 ? null : `writes off ${-e.shares} of ${held} shares in a pool of ${C}`;
    case 'deposit': {
      const want = S === 0 ? e.amount : C > 0 ? mintShares(e.amount, C, S) : -1;
      return e.shares === want ? null : `mints ${e.shares} shares for ${e.amount}; the rounding gives ${want}`;
    }
    case 'withdrawal': {
      const worth = valueOf(held, C, S);
      if (e.amount > worth) return `pays ${e.amount} to a position worth ${worth}`;
      const want = burnShares(e.amount, held, C, S);
      return -e.shares === want ? null : `burns ${-e.shares} shares for ${e.amount}; the rounding gives ${want}`;
    }
  }
}

/**
 * The first violation, or null, of the share rules (`shares`: each event's figures and rounding,
 * the positions worth the capital within the rounding) or of the locked capital (`locked`: each
 * withdrawal within the free capital it recorded, and the pool after it, from the postings, at
 * or above the capital locked then). Both check every event's figures against the postings.
 */
export async function shareViolation(c: Conn, check: 'shares' | 'locked'): Promise<string | null> {
  const walk = new PoolWalk(await c.raw<[number, number]>(Q.pool));
  const held = new Map<string, number>();
  let outstanding = 0;
  for (const e of await c.all<ShareEventRow>(Q.events)) {
    const capital = walk.before(e.before_transfer);
    if (e.capital_before !== Math.max(capital, 0) || e.shares_before !== outstanding) {
      return `share event ${e.id} (${e.kind}) used capital ${e.capital_before} and ${e.shares_before} shares; the ledger had ${capital} and ${outstanding}`;
    }
    const mine = held.get(e.provider_id) ?? 0;
    const problem = check === 'shares' ? eventProblem(e, mine) : null;
    if (problem !== null) return `share event ${e.id} (${e.kind}) of ${e.provider_id} ${problem}`;
    if (check === 'locked' && e.kind === 'withdrawal') {
      const locked = e.locked!;
      if (locked < 0 || locked > e.capital_before || e.exposure! < 0 || e.amount > e.capital_before - locked) {
        return `withdrawal payment ${e.id} paid ${e.amount} from capital ${e.capital_before} with ${locked} of it locked`;
      }
      const after = walk.before(e.transfer_id! + 1);
      if (after < locked) return `withdrawal payment ${e.id} left the pool at ${after}, below the ${locked} locked`;
    }
    held.set(e.provider_id, mine + e.shares);
    outstanding += e.shares;
  }
  if (check === 'locked') return null;
  const capital = walk.end();
  const positions = await c.raw<[string, number]>(Q.positions);
  let shares = 0;
  let worth = 0;
  for (const [id, n] of positions) {
    if (held.get(id) !== n) return `provider ${id} holds ${n} shares; its share events add up to ${held.get(id) ?? 0}`;
    shares += n;
  }
  if (shares !== outstanding) return `providers hold ${shares} shares; the share events add up to ${outstanding}`;
  for (const [, n] of positions) worth += valueOf(n, capital, shares);
  // Each position is rounded down by less than a micro-unit: together within one per provider.
  if (shares > 0 && (worth > capital || capital - worth >= Math.max(1, positions.length))) {
    return `${shares} shares are worth ${worth} together, but the pool holds ${capital}`;
  }
  return null;
}
