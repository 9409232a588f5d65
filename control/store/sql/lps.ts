/** Liquidity providers (`../lps.ts`), on either database. */
import { InvariantError } from '../../../protocol/coded-error';
import { COVERED_FAILURES, OUTCOMES } from '../../../protocol/outcome';
import { OPERATOR_LP } from '../../../protocol/lps';
import { newId } from '../../../protocol/keys';
import { sql, type Conn } from '../conn';
import { HOUR_MS } from '../settlement';
import {
  LpError,
  burnShares,
  exposureOf,
  lockedOf,
  mintShares,
  valueOf,
  type ExposureRow,
  type LpDeposit,
  type LpRow,
  type LpTotals,
  type LpsTable,
  type PoolCapital,
  type PoolDay,
  type ShareEventKind,
  type ShareEventRow,
  type WithdrawalPayment,
  type WithdrawalRow,
} from '../lps';
import { balance, transfer } from './postings';

const LP = 'id, name, shares, created_at, created_by';
const WITHDRAWAL = `w.id, w.provider_id, p.name AS provider, w.amount, w.paid, w.status, w.requested_at, w.requested_by, w.due_at,
  w.closed_at, w.closed_by`;
const EVENT = `id, provider_id, kind, shares, amount, capital_before, shares_before, before_transfer, transfer_id, withdrawal_id,
  exposure, locked, at`;
/**
 * The queue's covered failures as `unsettled_covered`'s predicate states them, term for term (so
 * SQLite's planner matches the partial index): every outcome but `ok`, `client_error` and `caller_error`.
 */
const NOT_COVERED = ['ok', 'client_error', 'caller_error'];
const COVERED_QUEUED = `key_id IS NOT NULL AND ${NOT_COVERED.map((o) => `outcome <> '${o}'`).join(' AND ')}`;
if (OUTCOMES.filter((o) => !COVERED_FAILURES.has(o)).join() !== NOT_COVERED.join()) {
  throw new InvariantError('unsettled_covered: the covered failures are no longer every outcome but ok, client_error and caller_error');
}

const Q = {
  insert: sql(`INSERT INTO liquidity_providers (${LP}) VALUES (?, ?, 0, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING ${LP}`),
  get: sql(`SELECT ${LP} FROM liquidity_providers WHERE id = ? OR name = ?`),
  list: sql(`SELECT ${LP} FROM liquidity_providers ORDER BY name`),
  addShares: sql(`UPDATE liquidity_providers SET shares = shares + ? WHERE id = ?`),
  holders: sql(`SELECT ${LP} FROM liquidity_providers WHERE shares > 0 ORDER BY id`),
  totals: sql(
    `SELECT provider_id,
            CAST(sum(CASE WHEN kind IN ('deposit', 'migration') THEN amount ELSE 0 END) AS BIGINT) AS deposited,
            CAST(sum(CASE WHEN kind = 'withdrawal' THEN amount ELSE 0 END) AS BIGINT) AS withdrawn
     FROM lp_share_events GROUP BY provider_id`,
  ),
  figures: sql(
    `SELECT coalesce((SELECT balance FROM account_balances WHERE account = 'pool'), 0) AS capital,
            CAST(coalesce((SELECT sum(shares) FROM liquidity_providers), 0) AS BIGINT) AS shares,
            (SELECT count(*) FROM liquidity_providers WHERE shares > 0) AS providers,
            (SELECT count(*) FROM lp_withdrawals WHERE status = 'pending') AS pending_withdrawals`,
  ),
  // Each endpoint's economics and this hour's refunds; its recorded failures are counted apart.
  endpoints: sql(
    `SELECT e.id AS endpoint_id, e.price, e.premium, e.refund_cap_per_call, e.refund_cap_per_hour,
            CASE WHEN e.removed_at IS NULL THEN 0 ELSE 1 END AS removed,
            coalesce((SELECT h.refunds FROM refund_hours h WHERE h.endpoint_id = e.id AND h.hour = ?), 0) AS refunded_this_hour
     FROM endpoints e`,
  ),
  // unsettled_covered: only the queue's covered failures, of one endpoint, before and since `from`
  // (those admitted uncovered are in the index, and left out here: the pool owes them nothing).
  failures: sql(
    `SELECT CAST(coalesce(sum(CASE WHEN started_at < @from THEN 1 ELSE 0 END), 0) AS BIGINT) AS before,
            CAST(coalesce(sum(CASE WHEN started_at >= @from THEN 1 ELSE 0 END), 0) AS BIGINT) AS current
     FROM unsettled_outcomes WHERE endpoint_id = @endpoint AND ${COVERED_QUEUED} AND uncovered = 0`,
    { replan: true }, // it reads the settler's queue (`SqlOptions.replan`)
  ),
  priorDeposit: sql(
    `SELECT t.id AS transfer_id, e.provider_id, e.amount, e.shares FROM ledger_transfers t JOIN lp_share_events e ON e.transfer_id = t.id
     WHERE t.kind = 'lp_deposit' AND t.reference = ?`,
  ),
  event: sql(
    `INSERT INTO lp_share_events (provider_id, kind, shares, amount, capital_before, shares_before, before_transfer, transfer_id,
                                  withdrawal_id, exposure, locked, at)
     VALUES (@provider_id, @kind, @shares, @amount, @capital_before, @shares_before, @before_transfer, @transfer_id,
             @withdrawal_id, @exposure, @locked, @at)`,
  ),
  events: sql(`SELECT ${EVENT} FROM lp_share_events WHERE provider_id = ? ORDER BY id DESC LIMIT ?`),
  requestWithdrawal: sql(
    `INSERT INTO lp_withdrawals (provider_id, amount, requested_at, requested_by, due_at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
  ),
  withdrawal: sql(`SELECT ${WITHDRAWAL} FROM lp_withdrawals w JOIN liquidity_providers p ON p.id = w.provider_id WHERE w.id = ?`),
  pendingOf: sql(
    `SELECT ${WITHDRAWAL} FROM lp_withdrawals w JOIN liquidity_providers p ON p.id = w.provider_id
     WHERE w.provider_id = ? AND w.status = 'pending' ORDER BY w.id`,
  ),
  // lp_withdrawals_pending, oldest due first.
  due: sql(
    `SELECT ${WITHDRAWAL} FROM lp_withdrawals w JOIN liquidity_providers p ON p.id = w.provider_id
     WHERE w.status = 'pending' AND w.due_at <= ? ORDER BY w.due_at, w.id`,
  ),
  sampleDay: sql(
    `INSERT INTO pool_days (day, capital, exposure, locked, at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (day) DO UPDATE SET capital = excluded.capital, at = excluded.at,
       locked = CASE WHEN excluded.exposure >= pool_days.exposure THEN excluded.locked ELSE pool_days.locked END,
       exposure = CASE WHEN excluded.exposure >= pool_days.exposure THEN excluded.exposure ELSE pool_days.exposure END`,
  ),
  days: sql(`SELECT day, capital, exposure, locked FROM pool_days WHERE day >= ? ORDER BY day`),
  withdrawals: sql(
    `SELECT ${WITHDRAWAL} FROM lp_withdrawals w JOIN liquidity_providers p ON p.id = w.provider_id
     WHERE (@pending = 0 OR w.status = 'pending') AND (CAST(@provider AS TEXT) IS NULL OR w.provider_id = @provider)
     ORDER BY w.id LIMIT 1000`,
  ),
  cancel: sql(`UPDATE lp_withdrawals SET status = 'cancelled', closed_at = ?, closed_by = ? WHERE id = ? AND status = 'pending'`),
  paid: sql(
    `UPDATE lp_withdrawals SET paid = paid + @amount,
            status = CASE WHEN @done = 1 THEN 'paid' ELSE status END,
            closed_at = CASE WHEN @done = 1 THEN @at ELSE closed_at END,
            closed_by = CASE WHEN @done = 1 THEN @actor ELSE closed_by END
     WHERE id = @id AND status = 'pending'`,
  ),
};

interface Figures {
  capital: number;
  shares: number;
  providers: number;
  pending_withdrawals: number;
}

/** A share event's columns, the optional ones null. */
interface NewEvent {
  provider_id: string;
  kind: ShareEventKind;
  shares: number;
  amount: number;
  capital_before: number;
  shares_before: number;
  before_transfer: number;
  transfer_id?: number | null;
  withdrawal_id?: number | null;
  exposure?: number | null;
  locked?: number | null;
  at: number;
}

export class SqlLpsTable implements LpsTable {
  constructor(private readonly conn: Conn) {}

  async add(name: string, at: number, actor: string): Promise<LpRow> {
    const row = await this.conn.get<LpRow>(Q.insert, [newId('lp'), name, at, actor]);
    if (row === undefined) throw new LpError('name_taken', 'name', `a liquidity provider named ${JSON.stringify(name)} exists`);
    return row;
  }

  get(ref: string): Promise<LpRow | undefined> {
    return this.conn.get<LpRow>(Q.get, [ref, ref]);
  }

  list(): Promise<LpRow[]> {
    return this.conn.all<LpRow>(Q.list);
  }

  async totals(): Promise<Map<string, LpTotals>> {
    const rows = await this.conn.all<{ provider_id: string } & LpTotals>(Q.totals);
    return new Map(rows.map((r) => [r.provider_id, { deposited: r.deposited, withdrawn: r.withdrawn }]));
  }

  capital(lockRatio: number, now: number): Promise<PoolCapital> {
    return this.conn.tx(async (c) => {
      const f = (await c.get<Figures>(Q.figures))!;
      const exposure = await exposureAt(c, now);
      return { ...f, exposure, locked: lockedOf(f.capital, exposure, lockRatio) };
    }, 'read');
  }

  deposit(
    providerId: string,
    amount: number,
    kind: 'lp_deposit' | 'fund',
    reference: string | null,
    at: number,
    actor: string,
  ): Promise<LpDeposit> {
    return this.conn.tx(async (c) => {
      if (kind === 'lp_deposit' && reference !== null) {
        const prior = await c.get<{ transfer_id: number; provider_id: string; amount: number; shares: number }>(Q.priorDeposit, [
          reference,
        ]);
        if (prior !== undefined) {
          if (prior.provider_id !== providerId || prior.amount !== amount)
            throw new LpError('reference_used', 'reference', `deposit reference ${JSON.stringify(reference)} was used for another deposit`);
          return { ...prior, reference, created: false };
        }
      }
      const f = (await c.get<Figures>(Q.figures))!;
      let shares = f.shares;
      const before: Omit<NewEvent, 'before_transfer'>[] = [];
      if (shares > 0 && f.capital <= 0) {
        // Shares of an empty pool are worth nothing: written off before anyone buys in.
        for (const holder of await c.all<LpRow>(Q.holders)) {
          before.push({
            provider_id: holder.id,
            kind: 'write_off',
            shares: -holder.shares,
            amount: 0,
            capital_before: f.capital,
            shares_before: shares,
            at,
          });
          shares -= holder.shares;
        }
      } else if (shares === 0 && f.capital > 0) {
        // Capital no one holds shares of (premiums earned with no provider) is the operator's.
        before.push({
          provider_id: OPERATOR_LP,
          kind: 'unowned',
          shares: f.capital,
          amount: f.capital,
          capital_before: f.capital,
          shares_before: 0,
          at,
        });
        shares = f.capital;
      }
      const minted = mintShares(amount, Math.max(f.capital, 0), shares);
      if (minted === 0)
        throw new LpError('mints_nothing', 'amount', `${amount} is less than one share is worth (${f.capital} over ${shares} shares)`);
      const postings = [
        { account: 'external', amount: -amount },
        { account: 'pool', amount },
      ];
      const transferId = await transfer(c, { kind, at, actor, reference, postings });
      for (const e of before) {
        await this.event(c, { ...e, before_transfer: transferId });
        await c.run(Q.addShares, [e.shares, e.provider_id]);
      }
      const event = {
        provider_id: providerId,
        kind: 'deposit' as const,
        shares: minted,
        amount,
        capital_before: Math.max(f.capital, 0),
        shares_before: shares,
        before_transfer: transferId,
        transfer_id: transferId,
        at,
      };
      await this.event(c, event);
      await c.run(Q.addShares, [minted, providerId]);
      return { transfer_id: transferId, provider_id: providerId, amount, reference, shares: minted, created: true };
    }, 'serial');
  }

  requestWithdrawal(providerId: string, amount: number | null, at: number, noticeMs: number, actor: string): Promise<WithdrawalRow> {
    return this.conn.tx(async (c) => {
      const f = (await c.get<Figures>(Q.figures))!;
      const provider = (await c.get<LpRow>(Q.get, [providerId, providerId]))!;
      const value = valueOf(provider.shares, f.capital, f.shares);
      const pending = await c.all<WithdrawalRow>(Q.pendingOf, [providerId]);
      if (pending.some((w) => w.amount === null))
        throw new LpError('over_position', 'amount', `${provider.name} has asked for its whole position already`);
      const asked = pending.reduce((n, w) => n + (w.amount! - w.paid), 0);
      if (amount === null ? value === 0 || asked > 0 : amount > value - asked) {
        const what = amount === null ? 'its whole position' : String(amount);
        throw new LpError(
          'over_position',
          'amount',
          `${provider.name} cannot withdraw ${what}: its position is worth ${value}, ${asked} of it asked for already`,
        );
      }
      const id = (await c.value<number>(Q.requestWithdrawal, [providerId, amount, at, actor, at + noticeMs]))!;
      return (await c.get<WithdrawalRow>(Q.withdrawal, [id]))!;
    }, 'serial');
  }

  cancelWithdrawal(id: number, at: number, actor: string): Promise<WithdrawalRow> {
    return this.conn.tx(async (c) => {
      if ((await c.run(Q.cancel, [at, actor, id])) !== 1) {
        const row = await c.get<WithdrawalRow>(Q.withdrawal, [id]);
        throw new LpError('not_pending', 'id', `withdrawal ${id} is ${row?.status ?? 'not found'}, not pending`);
      }
      return (await c.get<WithdrawalRow>(Q.withdrawal, [id]))!;
    }, 'serial');
  }

  withdrawal(id: number): Promise<WithdrawalRow | undefined> {
    return this.conn.get<WithdrawalRow>(Q.withdrawal, [id]);
  }

  withdrawals(opts: { pending?: boolean; providerId?: string }): Promise<WithdrawalRow[]> {
    return this.conn.all<WithdrawalRow>(Q.withdrawals, { pending: opts.pending === true ? 1 : 0, provider: opts.providerId ?? null });
  }

  events(providerId: string, limit: number): Promise<ShareEventRow[]> {
    return this.conn.all<ShareEventRow>(Q.events, [providerId, limit]);
  }

  payDue(now: number, lockRatio: number, actor: string): Promise<WithdrawalPayment[]> {
    return this.conn.tx(async (c) => {
      const due = await c.all<WithdrawalRow>(Q.due, [now]);
      if (due.length === 0) return [];
      const f = (await c.get<Figures>(Q.figures))!;
      const exposure = await exposureAt(c, now);
      let capital = f.capital;
      let shares = f.shares;
      const held = new Map<string, number>();
      const made: WithdrawalPayment[] = [];
      for (const w of due) {
        const locked = lockedOf(capital, exposure, lockRatio);
        const free = capital - locked;
        if (free <= 0) break;
        if (!held.has(w.provider_id)) held.set(w.provider_id, (await c.get<LpRow>(Q.get, [w.provider_id, w.provider_id]))!.shares);
        const mine = held.get(w.provider_id)!;
        const value = valueOf(mine, capital, shares);
        const want = w.amount === null ? value : Math.min(w.amount - w.paid, value);
        if (want === 0) {
          // Nothing left to pay: a position burned to nothing closes its request; one worth
          // nothing in an empty pool waits for capital.
          if (mine === 0) await c.run(Q.paid, { id: w.id, amount: 0, done: 1, at: now, actor });
          continue;
        }
        const amount = Math.min(want, free);
        const burned = burnShares(amount, mine, capital, shares);
        if (burned > mine) throw new InvariantError(`withdrawal ${w.id}: burning ${burned} of ${mine} shares`);
        const postings = [
          { account: 'pool', amount: -amount },
          { account: 'external', amount },
        ];
        const transferId = await transfer(c, { kind: 'lp_withdrawal', at: now, actor, reference: `withdrawal:${w.id}`, postings });
        await this.event(c, {
          provider_id: w.provider_id,
          kind: 'withdrawal',
          shares: -burned,
          amount,
          capital_before: capital,
          shares_before: shares,
          before_transfer: transferId,
          transfer_id: transferId,
          withdrawal_id: w.id,
          exposure,
          locked,
          at: now,
        });
        await c.run(Q.addShares, [-burned, w.provider_id]);
        const done = burned === mine || (w.amount !== null && w.paid + amount === w.amount);
        await c.run(Q.paid, { id: w.id, amount, done: done ? 1 : 0, at: now, actor });
        made.push({ withdrawal: w, amount, shares: burned, transfer_id: transferId, exposure, locked });
        held.set(w.provider_id, mine - burned);
        capital -= amount;
        shares -= burned;
        if (!done) break; // short of free capital: the rest waits, and so do the requests behind it
      }
      if ((await balance(c, 'pool')) !== capital) throw new InvariantError('withdrawals: the pool moved while they were paid');
      return made;
    }, 'serial');
  }

  async sampleDay(day: string, capital: PoolCapital, at: number): Promise<void> {
    await this.conn.run(Q.sampleDay, [day, capital.capital, capital.exposure, capital.locked, at]);
  }

  days(fromDay: string): Promise<PoolDay[]> {
    return this.conn.all<PoolDay>(Q.days, [fromDay]);
  }

  private async event(c: Conn, e: NewEvent): Promise<void> {
    await c.run(Q.event, { transfer_id: null, withdrawal_id: null, exposure: null, locked: null, ...e });
  }
}

/**
 * The pool's exposure at `now` on `c` (`exposureOf`): each endpoint's recorded failures counted
 * through `unsettled_covered` (one search per endpoint; endpoints are few, failures may not be).
 */
export async function exposureAt(c: Conn, now: number): Promise<number> {
  const hour = Math.floor(now / HOUR_MS);
  const rows: ExposureRow[] = [];
  for (const e of await c.all<Omit<ExposureRow, 'before' | 'current' | 'removed'> & { removed: number }>(Q.endpoints, [hour])) {
    const n = (await c.get<{ before: number; current: number }>(Q.failures, { from: hour * HOUR_MS, endpoint: e.endpoint_id }))!;
    rows.push({ ...e, ...n, removed: e.removed === 1 });
  }
  return exposureOf(rows);
}
