/** Operators and their tokens on PostgreSQL: `../operators.ts`'s statements (the same SQL), asynchronous. */
import {
  LAST_USED_EVERY_MS,
  OPERATOR_SQL,
  newOperatorParams,
  ownerOf,
  type NewOperator,
  type NewOperatorToken,
  type OperatorRow,
  type OperatorTokenRow,
  type OperatorsTable,
  type OwnerRow,
  type TokenOwner,
} from '../operators';
import type { Async } from '../seam';
import { sql, type PgConn, type Sql } from './conn';

const Q = Object.fromEntries(Object.entries(OPERATOR_SQL).map(([name, text]) => [name, sql(text)])) as Record<
  keyof typeof OPERATOR_SQL,
  Sql
>;

export class PgOperatorsTable implements Async<OperatorsTable> {
  constructor(private readonly conn: PgConn) {}

  async insert(op: NewOperator): Promise<void> {
    await this.conn.run(Q.insert, newOperatorParams(op));
  }

  async addToken(token: NewOperatorToken): Promise<void> {
    await this.conn.run(Q.insertToken, { ...token });
  }

  byName(name: string): Promise<OperatorRow | undefined> {
    return this.conn.get<OperatorRow>(Q.byName, [name]);
  }

  list(): Promise<OperatorRow[]> {
    return this.conn.all<OperatorRow>(Q.list);
  }

  tokens(name?: string): Promise<OperatorTokenRow[]> {
    return name === undefined ? this.conn.all<OperatorTokenRow>(Q.tokens) : this.conn.all<OperatorTokenRow>(Q.tokensOf, [name]);
  }

  async byTokenHash(sha256: string): Promise<TokenOwner | undefined> {
    const row = await this.conn.get<OwnerRow>(Q.byTokenHash, [sha256]);
    return row && ownerOf(row);
  }

  async expireTokens(name: string, until: number): Promise<void> {
    await this.conn.run(Q.expireTokens, { name, until });
  }

  async revoke(name: string, now: number): Promise<boolean> {
    return (await this.conn.run(Q.revoke, [now, name])) === 1;
  }

  async touch(name: string, now: number): Promise<void> {
    await this.conn.run(Q.touch, { name, now, before: now - LAST_USED_EVERY_MS });
  }
}
