/** `svcctl pool …`: the coverage pool. */
import { lazy, leaf, type GroupSpec } from '../../register';

export const pool: GroupSpec = {
  name: 'pool',
  description: 'the coverage pool (amounts: micro-units, or units with a decimal point)',
  commands: [
    leaf({
      name: 'fund',
      args: [{ name: '<amount>', description: '12500000 (micro-units) or 12.5 (units)' }],
      description: 'move money from outside into the pool',
      options: [{ flags: '--note <text>', description: 'where the money came from' }],
      load: () => lazy<typeof import('./fund.js')>(__dirname, 'fund'),
      shape: ([amount], o) => ({ ...o, amount: amount! }),
    }),
    leaf({
      name: 'show',
      description: 'pool balance, premiums, refunds, shortfall, and its capital: exposure, locked, free, shares',
      load: () => lazy<typeof import('./show.js')>(__dirname, 'show'),
      shape: (_a, o) => o,
    }),
  ],
};
