/** `svcctl keys …`: issue, inspect and revoke API keys. */
import { WAIT_OPTIONS, lazy, leaf, type GroupSpec } from '../../register';

export const keys: GroupSpec = {
  name: 'keys',
  description: 'issue, inspect and revoke API keys',
  commands: [
    leaf({
      name: 'issue',
      description: 'issue a key; the plaintext is printed once',
      options: [
        { flags: '--name <name>', description: 'label for the key' },
        { flags: '--account <name>', description: 'the account the key belongs to (name or id; default: an account of its own)' },
        { flags: '--wallet <address>', description: 'payout wallet (Solana or EVM)' },
        { flags: '--endpoint <id>', description: 'limit the key to an endpoint (repeatable; default: all)', repeatable: true },
        { flags: '--expires <duration>', description: 'expire after e.g. 30d, 12h' },
        { flags: '--limit <rate>', description: 'per-key limit, e.g. 60/min (default: config limits.key*)' },
      ],
      load: () => lazy<typeof import('./issue.js')>(__dirname, 'issue'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'list',
      description: 'list keys, newest first (never their plaintext); follows every page unless --limit or --cursor',
      options: [
        { flags: '--status <status>', description: 'active, expired or revoked (filtered by control)' },
        { flags: '--limit <n>', description: 'print one page of at most N keys (1-1000) and the cursor of the next' },
        { flags: '--cursor <cursor>', description: 'print the page that starts at this next_cursor' },
      ],
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'show',
      args: [{ name: '<id>' }],
      description: 'show one key',
      load: () => lazy<typeof import('./show.js')>(__dirname, 'show'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'revoke',
      args: [{ name: '<id>' }],
      description: 'revoke a key now',
      options: WAIT_OPTIONS,
      load: () => lazy<typeof import('./revoke.js')>(__dirname, 'revoke'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'rotate',
      args: [{ name: '<id>' }],
      description: 'replace the secret; the old one works for the grace period',
      options: [{ flags: '--grace <duration>', description: 'how long the old secret keeps working (default 24h; 0 = none)' }],
      load: () => lazy<typeof import('./rotate.js')>(__dirname, 'rotate'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'lift',
      args: [{ name: '<id>' }],
      description: 'temporarily raise a key’s limit',
      options: [
        { flags: '--limit <rate>', description: 'e.g. 600/min', required: true },
        { flags: '--for <duration>', description: 'e.g. 2h', required: true },
      ],
      load: () => lazy<typeof import('./lift.js')>(__dirname, 'lift'),
      shape: ([id], o) => ({ ...o, id: id! }) as { id: string; limit: string; for: string },
    }),
    leaf({
      name: 'wallet',
      args: [{ name: '<id>' }, { name: '[address]' }],
      description: 'attach or change the payout wallet',
      options: [{ flags: '--detach', description: 'remove the wallet' }],
      load: () => lazy<typeof import('./wallet.js')>(__dirname, 'wallet'),
      shape: ([id, address], o) => ({ ...o, id: id!, ...(address !== undefined ? { address } : {}) }),
    }),
  ],
};
