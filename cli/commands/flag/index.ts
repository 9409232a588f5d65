/** `svcctl flag …`: runtime flags. */
import { FLAG_NAMES, FLAG_PREFIX } from '../../../protocol/flag-names';
import { WAIT_OPTIONS, lazy, leaf, type GroupSpec } from '../../register';

export const flag: GroupSpec = {
  name: 'flag',
  description: `runtime flags (${FLAG_NAMES.join(', ')})`,
  commands: [
    leaf({
      name: 'set',
      args: [
        { name: '<name>', description: `${FLAG_NAMES.join(', ')} (each also as ${FLAG_PREFIX}<name>)` },
        { name: '<value>', description: 'on or off' },
      ],
      description: 'set a flag; the change is announced in the changelog',
      options: [{ flags: '--note <text>', description: 'why (shown in the changelog)' }, ...WAIT_OPTIONS],
      load: () => lazy<typeof import('./set.js')>(__dirname, 'set'),
      shape: ([name, value], o) => ({ ...o, name: name!, value: value! }),
    }),
    leaf({
      name: 'get',
      args: [{ name: '<name>' }],
      description: 'show a flag',
      load: () => lazy<typeof import('./get.js')>(__dirname, 'get'),
      shape: ([name], o) => ({ ...o, name: name! }),
    }),
    leaf({ name: 'list', description: 'list flags', load: () => lazy<typeof import('./list.js')>(__dirname, 'list'), shape: (_a, o) => o }),
  ],
};
