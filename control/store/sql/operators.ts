/** Operators and their tokens (`../operators.ts`), on either database. */
import { sql, type Conn } from '../conn';
import {
  LAST_USED_EVERY_MS,
  storedScopes,
  type NewOperator,
  type NewOperatorToken,
  type OperatorRow,
  type OperatorTokenRow,
  type OperatorsTable,
  type TokenOwner,
} from '../operators';

/** The columns of a token, its digest left out. */
const TOKEN_COLUMNS = 'token_id, operator, created_at, expires_at';

const Q = {
  insert: sql(`INSERT INTO operators (name, scopes, created_at, expires_at) VALUES (@name, @scopes, @created_at, @expires_at)`),
  insertToken: sql(
    `INSERT INTO operator_tokens (token_id, operator, sha256, created_at, expires_at) VALUES (@token_id, @operator, @sha256, @created_at, NULL)`,
  ),
  byName: sql(`SELECT * FROM operators WHERE name = ?`),
  list: sql(`SELECT * FROM operators ORDER BY name = 'root' DESC, name`),
  tokens: sql(`SELECT ${TOKEN_COLUMNS} FROM operator_tokens ORDER BY operator, created_at, token_id`),
  tokensOf: sql(`SELECT ${TOKEN_COLUMNS} FROM operator_tokens WHERE operator = ? ORDER BY created_at, token_id`),
  byTokenHash: sql(
    `SELECT o.*, t.token_id, t.created_at AS token_created_at, t.expires_at AS token_expires_at
     FROM operator_tokens t JOIN operators o ON o.name = t.operator WHERE t.sha256 = ?`,
  ),
  // Never extends a token already counting down (a second rotation keeps the first one's grace).
  expireTokens: sql(
    `UPDATE operator_tokens SET expires_at = @until WHERE operator = @name AND (expires_at IS NULL OR expires_at > @until)`,
  ),
  revoke: sql(`UPDATE operators SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL`),
  touch: sql(`UPDATE operators SET last_used_at = @now WHERE name = @name AND (last_used_at IS NULL OR last_used_at <= @before)`),
};

/** A joined row of `byTokenHash`: the operator's columns and its token's. */
interface OwnerRow extends OperatorRow {
  token_id: string;
  token_created_at: number;
  token_expires_at: number | null;
}

export class SqlOperatorsTable implements OperatorsTable {
  constructor(private readonly conn: Conn) {}

  async insert(op: NewOperator): Promise<void> {
    const { name, created_at, expires_at } = op;
    await this.conn.run(Q.insert, { name, scopes: storedScopes(op.scopes), created_at, expires_at });
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
    if (row === undefined) return undefined;
    const { token_id, token_created_at, token_expires_at, ...operator } = row;
    return { token: { token_id, operator: row.name, created_at: token_created_at, expires_at: token_expires_at }, operator };
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
