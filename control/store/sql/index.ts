/**
 * The table families written once, in SQL both databases run (`../conn.ts`): each backend
 * builds them on its own `Conn`, outside a transaction and inside each one.
 */
import type { Conn } from '../conn';
import type { FlagsTable } from '../flags';
import { SqlFlagsTable } from './flags';
import { stateTables, type StateTables } from './state';

/** The families every store shares, as callers see them. */
export interface SharedTables extends StateTables {
  readonly flags: FlagsTable;
}

/** The shared families on `conn`. */
export function sharedTables(conn: Conn): SharedTables {
  return {
    ...stateTables(conn),
    flags: new SqlFlagsTable(conn),
  };
}
