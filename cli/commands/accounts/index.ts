/** `svcctl accounts …`: the accounts that hold prepaid money; every key belongs to one. */
import { WAIT_OPTIONS, lazy, leaf, type GroupSpec } from '../../register';

export const accounts: GroupSpec = {
  name: 'accounts',
  description: 'accounts that hold prepaid money; every key belongs to one (amounts: micro-units, or units with a decimal point)',
  commands: [
    leaf({
      name: 'add',
      args: [{ name: '<name>', description: '1 to 64 of A-Z a-z 0-9 . _ -' }],
      description: 'add an account; issue keys into it with keys issue --account NAME',
      options: [{ flags: '--low <amount>', description: 'low-balance threshold: the account shows low under it' }],
      load: () => lazy<typeof import('./add.js')>(__dirname, 'add'),
      shape: ([name], o) => ({ ...o, name: name! }),
    }),
    leaf({
      name: 'list',
      description: 'list accounts by name, with their balances; follows every page unless --limit or --cursor',
      options: [
        { flags: '--limit <n>', description: 'print one page of at most N accounts (1-1000) and the cursor of the next' },
        { flags: '--cursor <cursor>', description: 'print the page that starts at this next_cursor' },
      ],
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'show',
      args: [{ name: '<account>', description: 'its name or id (acc_…)' }],
      description: 'show one account: balance, keys, wallet, threshold, refill',
      load: () => lazy<typeof import('./show.js')>(__dirname, 'show'),
      shape: ([account], o) => ({ ...o, account: account! }),
    }),
    leaf({
      name: 'deposit',
      args: [
        { name: '<account>', description: 'its name or id (acc_…)' },
        { name: '<amount>', description: 'micro-units, or units with a decimal point' },
      ],
      description: 'deposit into an account (external → account), once per reference',
      options: [
        {
          flags: '--reference <ref>',
          description: 'your reference for the deposit (unique: the same one again is a replay)',
          required: true,
        },
        ...WAIT_OPTIONS,
      ],
      load: () => lazy<typeof import('./deposit.js')>(__dirname, 'deposit'),
      shape: ([account, amount], o) => ({
        ...(o as { reference: string; wait?: boolean; timeout?: string }),
        account: account!,
        amount: amount!,
      }),
    }),
    leaf({
      name: 'refill',
      args: [
        { name: '<account>', description: 'its name or id (acc_…)' },
        { name: '[amount]', description: 'what the balance is brought up to each period: micro-units, or units with a decimal point' },
      ],
      description: 'refill an account up to AMOUNT once a period (UTC), and now for the current one; --never to stop',
      options: [
        { flags: '--every <period>', description: 'day or month' },
        { flags: '--day <n>', description: "with --every month: the day, 1-31 (the month's last day when shorter; default 1)" },
        { flags: '--never', description: 'clear the refill rule' },
      ],
      load: () => lazy<typeof import('./refill.js')>(__dirname, 'refill'),
      shape: ([account, amount], o) => ({ ...o, account: account!, ...(amount !== undefined ? { amount } : {}) }),
    }),
    leaf({
      name: 'low',
      args: [
        { name: '<account>', description: 'its name or id (acc_…)' },
        { name: '[amount]', description: 'micro-units, or units with a decimal point' },
      ],
      description: "set the account's low-balance threshold: the agent's account shows low under it",
      options: [{ flags: '--clear', description: 'remove the threshold' }],
      load: () => lazy<typeof import('./low.js')>(__dirname, 'low'),
      shape: ([account, amount], o) => ({ ...o, account: account!, ...(amount !== undefined ? { amount } : {}) }),
    }),
    leaf({
      name: 'wallet',
      args: [
        { name: '<account>', description: 'its name or id (acc_…)' },
        { name: '[address]', description: 'the payout wallet (Solana or EVM)' },
      ],
      description: "attach or change the account's payout wallet",
      options: [{ flags: '--detach', description: 'remove the wallet' }],
      load: () => lazy<typeof import('./wallet.js')>(__dirname, 'wallet'),
      shape: ([account, address], o) => ({ ...o, account: account!, ...(address !== undefined ? { address } : {}) }),
    }),
  ],
};
