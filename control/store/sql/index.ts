/**
 * The table families written once, in SQL both databases run (`../conn.ts`): each backend
 * builds them on its own `Conn`, outside a transaction and inside each one.
 */
import type { Conn } from '../conn';
import type { AuditTable } from '../audit';
import type { ChangelogTable } from '../changelog';
import type { EndpointsTable } from '../endpoints';
import type { FlagsTable } from '../flags';
import type { KeysTable } from '../keys';
import type { AccountsTable } from '../accounts';
import { SqlAccountsTable } from './accounts';
import type { BudgetsTable } from '../budgets';
import { SqlBudgetsTable } from './budgets';
import type { LpsTable } from '../lps';
import { SqlLpsTable } from './lps';
import { SqlAuditTable } from './audit';
import { SqlChangelogTable } from './changelog';
import { SqlEndpointsTable } from './endpoints';
import { SqlFlagsTable } from './flags';
import { SqlKeysTable } from './keys';
import { stateTables, type StateTables } from './state';
import type { ApprovalsTable } from '../approvals';
import type { OperatorsTable } from '../operators';
import type { ApplicationsTable } from '../applications';
import type { GatewaysTable } from '../gateways';
import { SqlApprovalsTable } from './approvals';
import { SqlOperatorsTable } from './operators';
import { SqlApplicationsTable } from './applications';
import { SqlGatewaysTable } from './gateways';
import type { OutcomesTable } from '../outcomes';
import type { RollupsTable } from '../rollups';
import type { PublicReads } from '../public-reads';
import { SqlOutcomesTable } from './outcomes';
import { SqlRollupsTable } from './rollups';
import { SqlPublicReads } from './public-reads';

/** The families every store shares, as callers see them. */
export interface SharedTables extends StateTables {
  readonly flags: FlagsTable;
  readonly changelog: ChangelogTable;
  readonly audit: AuditTable;
  readonly endpoints: EndpointsTable;
  readonly keys: KeysTable;
  /** Who holds prepaid money; every key belongs to one. */
  readonly accounts: AccountsTable;
  /** What gateway instances hold of each account's money (prepaid budgets). */
  readonly budgets: BudgetsTable;
  /** Who owns the pool's capital, in shares, and the withdrawal queue. */
  readonly lps: LpsTable;
  /** Money actions waiting for a second operator. */
  readonly approvals: ApprovalsTable;
  /** Operators and their tokens (digests only). */
  readonly operators: OperatorsTable;
  /** Access applications and their key delivery log. */
  readonly applications: ApplicationsTable;
  /** Every gateway that has dialled in. */
  readonly gateways: GatewaysTable;
  /** Call outcomes, ingested with their queue entries and rollups. */
  readonly outcomes: OutcomesTable;
  /** Per-endpoint, per-minute outcome rollups. */
  readonly rollups: RollupsTable;
  /** Recorded calls, refunds and batches for the public API and indexer. */
  readonly publicReads: PublicReads;
}

/** The shared families on `conn`. */
export function sharedTables(conn: Conn): SharedTables {
  return {
    ...stateTables(conn),
    flags: new SqlFlagsTable(conn),
    changelog: new SqlChangelogTable(conn),
    audit: new SqlAuditTable(conn),
    endpoints: new SqlEndpointsTable(conn),
    keys: new SqlKeysTable(conn),
    accounts: new SqlAccountsTable(conn),
    budgets: new SqlBudgetsTable(conn),
    lps: new SqlLpsTable(conn),
    approvals: new SqlApprovalsTable(conn),
    operators: new SqlOperatorsTable(conn),
    applications: new SqlApplicationsTable(conn),
    gateways: new SqlGatewaysTable(conn),
    outcomes: new SqlOutcomesTable(conn),
    rollups: new SqlRollupsTable(conn),
    publicReads: new SqlPublicReads(conn),
  };
}
