/** `svcctl pool …`: the coverage pool. */
import { lazy, leaf, type GroupSpec, type OptionSpec } from '../../register';

const NOTE: OptionSpec = {
  flags: '--note <text>',
  description: 'why, 1 to 500 characters (public: the changelog shows it)',
  required: true,
};

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
      description:
        'pool balance, premiums, refunds, shortfall, whether coverage is paused, and its capital: exposure, locked, free, shares',
      load: () => lazy<typeof import('./show.js')>(__dirname, 'show'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'pause',
      description: 'pause coverage at once: calls go on uncovered (no premium, no refund) until resumed; published in the changelog',
      options: [NOTE],
      load: () => lazy<typeof import('./pause.js')>(__dirname, 'pause'),
      shape: (_a, o) => o as { note: string },
    }),
    leaf({
      name: 'resume',
      description: 'resume coverage after a pause; published in the changelog',
      options: [NOTE],
      load: () => lazy<typeof import('./resume.js')>(__dirname, 'resume'),
      shape: (_a, o) => o as { note: string },
    }),
  ],
};
