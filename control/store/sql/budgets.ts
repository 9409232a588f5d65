/** Prepaid budgets (`../budgets.ts`), on either database. */
import { sql, type Conn } from '../conn';
import { accountLedger } from '../accounts';
import {
  SHORT_MS,
  askBack,
  heldBy,
  planGrant,
  type AccountHolding,
  type AccountMoney,
  type BudgetsTable,
  type EscrowRow,
} from '../budgets';

/**
 * What the unsettled prepaid calls of the account whose id is the SQL expression `account`
 * reserved: one of the three figures of an account's free money, written once for the grants
 * (here), the payouts (`ledger.ts`) and `ledger verify` (`ledger-verify.ts`).
 */
export const RESERVED_OF = (account: string): string =>
  `coalesce((SELECT sum(q.reserved) FROM keys k JOIN unsettled_outcomes q ON q.key_id = k.id
             WHERE k.account_id = ${account} AND q.reserved IS NOT NULL), 0)`;

/** What the open escrows of that account hold and have not spent (`heldBy`), written once likewise. */
export const HELD_OF = (account: string): string =>
  `coalesce((SELECT sum(CASE WHEN e.granted - e.returned - e.spent > 0 THEN e.granted - e.returned - e.spent ELSE 0 END)
             FROM account_escrows e WHERE e.account_id = ${account} AND e.released_at IS NULL), 0)`;

/**
 * The account's balance, reservations and open escrows in ONE statement: on PostgreSQL each
 * statement of a READ COMMITTED transaction sees its own snapshot, and an ingest commits a call's
 * reservation and its escrow's `spent` together, so reading them apart could count that call in
 * neither and grant its money twice. One row with null escrow columns when none is open.
 */
const MONEY = `SELECT m.balance, m.reserved, e.gateway_id, e.instance, e.granted, e.returned, e.spent, e.wanted_at, e.short_at,
    coalesce(g.weight, 1) AS weight, g.share
  FROM (SELECT coalesce((SELECT b.balance FROM account_balances b WHERE b.account = @ledger), 0) AS balance,
               ${RESERVED_OF('@account')} AS reserved) AS m
    LEFT JOIN account_escrows e ON e.account_id = @account AND e.released_at IS NULL
    LEFT JOIN gateways g ON g.id = e.gateway_id
  ORDER BY e.gateway_id, e.instance`;

const ESCROW = 'account_id = @account AND gateway_id = @gateway AND instance = @instance';

const Q = {
  money: sql(MONEY),
  exists: sql(`SELECT 1 FROM accounts WHERE id = ?`),
  // Grants to one account run one at a time across controls; SQLite's write transaction is one already.
  lock: sql(`SELECT 1 FROM accounts WHERE id = ? FOR UPDATE`, { pgOnly: true }),
  grant: sql(
    `INSERT INTO account_escrows (account_id, gateway_id, instance, granted, wanted_at, short_at, created_at)
     VALUES (@account, @gateway, @instance, @give, @now, @short, @now)
     ON CONFLICT (account_id, gateway_id, instance) DO UPDATE SET granted = account_escrows.granted + excluded.granted,
       wanted_at = excluded.wanted_at, short_at = coalesce(excluded.short_at, account_escrows.short_at)
     WHERE account_escrows.released_at IS NULL
     RETURNING granted`,
  ),
  granted: sql(`SELECT granted FROM account_escrows WHERE ${ESCROW}`),
  // Returns only grow, and never past what was granted and not spent.
  report: sql(
    `UPDATE account_escrows SET returned = CASE
       WHEN (CASE WHEN @returned < granted - spent THEN @returned ELSE granted - spent END) > returned
       THEN (CASE WHEN @returned < granted - spent THEN @returned ELSE granted - spent END) ELSE returned END
     WHERE ${ESCROW} AND released_at IS NULL
     RETURNING granted`,
  ),
  // account_escrows_short: the accounts of this instance's open escrows that another instance was short of lately.
  shortOf: sql(
    `SELECT DISTINCT s.account_id FROM account_escrows s
       JOIN account_escrows mine ON mine.account_id = s.account_id AND mine.gateway_id = @gateway
         AND mine.instance = @instance AND mine.released_at IS NULL
     WHERE s.short_at >= @since AND s.released_at IS NULL AND NOT (s.gateway_id = @gateway AND s.instance = @instance)
     ORDER BY s.account_id`,
  ),
  release: sql(
    `UPDATE account_escrows SET released_at = @now WHERE gateway_id = @gateway AND instance <> @instance AND released_at IS NULL`,
  ),
};

interface MoneyRow extends Omit<EscrowRow, 'gateway_id' | 'instance'> {
  balance: number;
  reserved: number;
  gateway_id: string | null;
  instance: string | null;
}

export class SqlBudgetsTable implements BudgetsTable {
  constructor(private readonly conn: Conn) {}

  money(accountId: string): Promise<AccountMoney> {
    return moneyOf(this.conn, accountId);
  }

  grant(
    account: string,
    gateway: string,
    instance: string,
    need: number,
    now: number,
  ): Promise<{ granted: number; short: boolean } | null> {
    return this.conn.tx(async (c) => {
      if (c.dialect === 'pg') {
        if ((await c.value(Q.lock, [account])) === undefined) return null;
      } else if ((await c.value(Q.exists, [account])) === undefined) return null;
      const money = await moneyOf(c, account);
      const known = money.escrows.find((e) => e.gateway_id === gateway) ?? (await gatewayTerms(c, gateway));
      const { give, short } = planGrant(money, { gateway_id: gateway, instance, weight: known.weight, share: known.share }, need, now);
      const params = { account, gateway, instance, give, now, short: short ? now : null };
      const granted = (await c.value<number>(Q.grant, params)) ?? (await c.value<number>(Q.granted, params)) ?? 0;
      return { granted, short };
    }, 'write');
  }

  async report(
    account: string,
    gateway: string,
    instance: string,
    returned: number,
    now: number,
  ): Promise<{ granted: number; ask: number } | null> {
    const granted = await this.conn.value<number>(Q.report, { account, gateway, instance, returned });
    if (granted === undefined) return null;
    return { granted, ask: (await this.standing(account, gateway, instance, now))?.ask ?? 0 };
  }

  async standing(account: string, gateway: string, instance: string, now: number): Promise<{ granted: number; ask: number } | null> {
    const money = await moneyOf(this.conn, account);
    const mine = money.escrows.find((e) => e.gateway_id === gateway && e.instance === instance);
    return mine === undefined ? null : { granted: mine.granted, ask: askBack(money, mine, now) };
  }

  shortOf(gateway: string, instance: string, now: number): Promise<string[]> {
    return this.conn.column<string>(Q.shortOf, { gateway, instance, since: now - SHORT_MS });
  }

  release(gateway: string, instance: string, now: number): Promise<number> {
    return this.conn.run(Q.release, { gateway, instance, now });
  }

  async holding(accountId: string): Promise<AccountHolding> {
    const money = await moneyOf(this.conn, accountId);
    return { balance: money.balance, reserved: money.reserved, held: money.escrows.reduce((sum, e) => sum + heldBy(e), 0) };
  }
}

const TERMS = sql(`SELECT weight, share FROM gateways WHERE id = ?`);

/** A gateway's weight and limit share (1 and none for a gateway control has not seen). */
async function gatewayTerms(c: Conn, gateway: string): Promise<{ weight: number; share: number | null }> {
  const row = await c.get<{ weight: number; share: number | null }>(TERMS, [gateway]);
  return { weight: Number(row?.weight ?? 1), share: row?.share == null ? null : Number(row.share) };
}

async function moneyOf(c: Conn, account: string): Promise<AccountMoney> {
  const rows = await c.all<MoneyRow>(Q.money, { account, ledger: accountLedger(account) });
  const first = rows[0];
  const money: AccountMoney = { balance: Number(first?.balance ?? 0), reserved: Number(first?.reserved ?? 0), escrows: [] };
  for (const r of rows) {
    if (r.gateway_id === null || r.instance === null) continue;
    money.escrows.push({
      gateway_id: r.gateway_id,
      instance: r.instance,
      granted: Number(r.granted),
      returned: Number(r.returned),
      spent: Number(r.spent),
      wanted_at: r.wanted_at === null ? null : Number(r.wanted_at),
      short_at: r.short_at === null ? null : Number(r.short_at),
      weight: Number(r.weight),
      share: r.share == null ? null : Number(r.share),
    });
  }
  return money;
}
