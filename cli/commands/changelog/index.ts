/** `svcctl changelog …`: the public changelog. */
import { lazy, leaf, type GroupSpec } from '../../register';

export const changelog: GroupSpec = {
  name: 'changelog',
  description: 'the public changelog',
  commands: [
    leaf({
      name: 'add',
      args: [{ name: '<text>' }],
      description: 'add an operator notice',
      load: () => lazy<typeof import('./add.js')>(__dirname, 'add'),
      shape: ([text], o) => ({ ...o, text: text! }),
    }),
    leaf({
      name: 'list',
      description: 'list entries, newest first',
      options: [{ flags: '--limit <n>', description: 'how many (default 50)' }],
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
  ],
};
