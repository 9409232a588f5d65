/** `svcctl audit …`: who did what, when. */
import { lazy, leaf, type GroupSpec } from '../../register';

export const audit: GroupSpec = {
  name: 'audit',
  description: 'read the audit log: who (operator and token id) did what, when',
  commands: [
    leaf({
      name: 'list',
      description: 'the audit log, newest first',
      options: [
        { flags: '--operator <name>', description: 'only what this operator did (root for the bootstrap admin token)' },
        { flags: '--action <action>', description: 'only this action (keys.revoke) or family (keys)' },
        { flags: '--since <iso>', description: 'only at or after this ISO 8601 time, e.g. 2030-01-01T00:00:00Z' },
        { flags: '--limit <n>', description: 'at most N entries (1-10000, default 100)' },
        { flags: '--cursor <cursor>', description: 'continue from the next_cursor of a previous list' },
      ],
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
  ],
};
