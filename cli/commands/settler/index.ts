/** `svcctl settler …`: the settler. */
import { lazy, leaf, type GroupSpec } from '../../register';

export const settler: GroupSpec = {
  name: 'settler',
  description: 'the settler: settles call outcomes on the ledger',
  commands: [
    leaf({
      name: 'status',
      description: 'state, backlog, last batch',
      load: () => lazy<typeof import('./status.js')>(__dirname, 'status'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'pause',
      description: 'stop scheduled settlement (kept across restarts)',
      load: () => lazy<typeof import('./pause.js')>(__dirname, 'pause'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'resume',
      description: 'settle on the cadence again',
      load: () => lazy<typeof import('./resume.js')>(__dirname, 'resume'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'run-once',
      description: 'settle everything received until now, also while paused',
      load: () => lazy<typeof import('./run-once.js')>(__dirname, 'run-once'),
      shape: (_a, o) => o,
    }),
  ],
};
