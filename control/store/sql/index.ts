/**
 * The table families written once, in SQL both databases run (`../conn.ts`): each backend
 * builds them on its own `Conn`, outside a transaction and inside each one.
 */
import type { Conn } from '../conn';
import type { FlagsTable } from '../flags';
import type { ApprovalsTable } from '../approvals';
import type { OperatorsTable } from '../operators';
import type { ApplicationsTable } from '../applications';
import type { GatewaysTable } from '../gateways';
import { SqlFlagsTable } from './flags';
import { SqlApprovalsTable } from './approvals';
import { SqlOperatorsTable } from './operators';
import { SqlApplicationsTable } from './applications';
import { SqlGatewaysTable } from './gateways';

/** The families every store shares, as callers see them. */
export interface SharedTables {
  readonly flags: FlagsTable;
  /** Money actions waiting for a second operator. */
  readonly approvals: ApprovalsTable;
  /** Operators and their tokens (digests only). */
  readonly operators: OperatorsTable;
  /** Access applications and their key delivery log. */
  readonly applications: ApplicationsTable;
  /** Every gateway that has dialled in. */
  readonly gateways: GatewaysTable;
}

/** The shared families on `conn`. */
export function sharedTables(conn: Conn): SharedTables {
  return {
    flags: new SqlFlagsTable(conn),
    approvals: new SqlApprovalsTable(conn),
    operators: new SqlOperatorsTable(conn),
    applications: new SqlApplicationsTable(conn),
    gateways: new SqlGatewaysTable(conn),
  };
}
