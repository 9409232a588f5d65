/** `svcctl operators …`: named admin tokens with scopes. */
import { OPERATOR_SCOPES } from '../../../protocol/scopes';
import { lazy, leaf, type GroupSpec } from '../../register';

export const operators: GroupSpec = {
  name: 'operators',
  description: 'add, list, revoke and rotate operators: named admin tokens with scopes',
  commands: [
    leaf({
      name: 'add',
      args: [{ name: '<name>' }],
      description: 'add an operator; its token is printed once',
      options: [
        { flags: '--scopes <scopes>', description: `comma-separated: ${OPERATOR_SCOPES.join(', ')}`, required: true },
        { flags: '--expires <duration>', description: 'expire after e.g. 30d, 12h (default: never)' },
      ],
      load: () => lazy<typeof import('./add.js')>(__dirname, 'add'),
      shape: ([name], o) => ({ ...o, name: name! }) as { name: string; scopes: string; expires?: string; json?: boolean },
    }),
    leaf({
      name: 'list',
      description: 'list operators, root first: scopes, status, created, last used, expiry (never a token)',
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'revoke',
      args: [{ name: '<name>' }],
      description: 'revoke an operator: its tokens stop working at once',
      load: () => lazy<typeof import('./revoke.js')>(__dirname, 'revoke'),
      shape: ([name], o) => ({ ...o, name: name! }),
    }),
    leaf({
      name: 'rotate',
      args: [{ name: '<name>' }],
      description: 'a new token for an operator; the old one stops at once, or after --grace',
      options: [{ flags: '--grace <duration>', description: 'how long the old token keeps working (default 0: none)' }],
      load: () => lazy<typeof import('./rotate.js')>(__dirname, 'rotate'),
      shape: ([name], o) => ({ ...o, name: name! }),
    }),
  ],
};
