/** `svcctl ledger …`: the double-entry ledger. */
import { lazy, leaf, type GroupSpec } from '../../register';

export const ledger: GroupSpec = {
  name: 'ledger',
  description: 'the double-entry ledger',
  commands: [
    leaf({
      name: 'verify',
      description: 'check the ledger invariants; exit 1 with the first violation',
      load: () => lazy<typeof import('./verify.js')>(__dirname, 'verify'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'balances',
      description: 'account balances',
      options: [
        {
          flags: '--account <account>',
          description: 'one account (pool, treasury, external, account:<id>, key:<id>) or a prefix ending in ":"',
        },
      ],
      load: () => lazy<typeof import('./balances.js')>(__dirname, 'balances'),
      shape: (_a, o) => o,
    }),
  ],
};
