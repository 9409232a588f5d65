/**
 * Every svcctl command, in the order `svcctl --help` lists them. Each group's commands are in
 * its folder's `index.ts`; a command's own module (`<noun>/<verb>.ts`, `run(opts, deps)`) is
 * loaded only when it runs. `../register.ts` turns this table into commander commands.
 */
import { lazy, leaf, type CommandSpec } from '../register';
import { applications } from './applications/index';
import { approvals } from './approvals/index';
import { audit } from './audit/index';
import { changelog } from './changelog/index';
import { endpoints } from './endpoints/index';
import { flag } from './flag/index';
import { gateways } from './gateways/index';
import { keys } from './keys/index';
import { accounts } from './accounts/index';
import { ledger } from './ledger/index';
import { lps } from './lps/index';
import { operators } from './operators/index';
import { payouts } from './payouts/index';
import { pool } from './pool/index';
import { receipts } from './receipts/index';
import { serve, up } from './serve/index';
import { settler } from './settler/index';
import { store } from './store/index';

export const COMMANDS: readonly CommandSpec[] = [
  keys,
  accounts,
  flag,
  endpoints,
  changelog,
  audit,
  applications,
  pool,
  lps,
  settler,
  ledger,
  receipts,
  payouts,
  gateways,
  operators,
  approvals,
  leaf({
    name: 'status',
    description: 'control, flags, counts and gateways',
    load: () => lazy<typeof import('./status.js')>(__dirname, 'status'),
    shape: (_a, o) => o,
  }),
  leaf({
    name: 'stats',
    description: 'the indexer’s statistics: pool, settlements, calls, recent activity',
    load: () => lazy<typeof import('./stats.js')>(__dirname, 'stats'),
    shape: (_a, o) => o,
  }),
  store,
  serve,
  up,
];
