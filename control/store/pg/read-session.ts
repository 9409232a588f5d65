/** A full snapshot's read transaction on PostgreSQL: a connection of its own from the pool, one `REPEATABLE READ` view. */
import type { Pool, PoolClient } from 'pg';
import type { ReadSession } from '../sql/snapshot-reads';
import { PgConn } from './conn';
import { unreachable } from './unreachable';

export function pgReadSession(pool: Pool): ReadSession {
  let client: PoolClient | null = null;
  return {
    async open() {
      let checkedOut: PoolClient;
      try {
        checkedOut = await pool.connect();
      } catch (err) {
        throw unreachable(err, pool);
      }
      try {
        await checkedOut.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      } catch (err) {
        checkedOut.release(err as Error);
        throw unreachable(err, pool);
      }
      client = checkedOut;
      // Statements run on this connection, inside the transaction just begun.
      return new PgConn(pool, client, 'read');
    },
    async close() {
      const held = client;
      if (held === null) return;
      client = null;
      let broken: Error | undefined;
      await held.query('COMMIT').catch((err: Error) => (broken = err));
      held.release(broken);
    },
  };
}
