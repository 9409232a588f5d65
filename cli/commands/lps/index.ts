/** `svcctl lps …`: the liquidity providers who own the pool's capital in shares (docs/money.md, "Pool capital"). */
import { lazy, leaf, type GroupSpec } from '../../register';

const PROVIDER = { name: '<name>', description: 'its name or id (lp_…, or operator)' };

export const lps: GroupSpec = {
  name: 'lps',
  description: "liquidity providers: who owns the pool's capital, in shares (amounts: micro-units, or units with a decimal point)",
  commands: [
    leaf({
      name: 'add',
      args: [{ name: '<name>', description: '1 to 64 of A-Z a-z 0-9 . _ -, not starting with lp_' }],
      description: 'add a liquidity provider; it holds no shares until its first deposit',
      load: () => lazy<typeof import('./add.js')>(__dirname, 'add'),
      shape: ([name], o) => ({ ...o, name: name! }),
    }),
    leaf({
      name: 'list',
      description: "every provider's position (shares, value, deposited, withdrawn, gain, pending) and the pool's capital",
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'show',
      args: [PROVIDER],
      description: "one provider's position, its withdrawals and its share events",
      load: () => lazy<typeof import('./show.js')>(__dirname, 'show'),
      shape: ([name], o) => ({ ...o, name: name! }),
    }),
    leaf({
      name: 'deposit',
      args: [PROVIDER, { name: '<amount>', description: 'micro-units, or units with a decimal point' }],
      description: "deposit into a provider's position (external → pool), minting its shares; once per reference",
      options: [
        {
          flags: '--reference <ref>',
          description: 'your reference for the deposit (unique: the same one again is a replay)',
          required: true,
        },
      ],
      load: () => lazy<typeof import('./deposit.js')>(__dirname, 'deposit'),
      shape: ([name, amount], o) => ({ ...(o as { reference: string }), name: name!, amount: amount! }),
    }),
    leaf({
      name: 'withdraw',
      args: [PROVIDER, { name: '[amount]', description: 'micro-units, or units with a decimal point' }],
      description: 'request a withdrawal: paid from free capital once its notice (pool.withdrawalNoticeH) has passed',
      options: [{ flags: '--all', description: 'the whole position, at its value when each payment is made' }],
      load: () => lazy<typeof import('./withdraw.js')>(__dirname, 'withdraw'),
      shape: ([name, amount], o) => ({ ...o, name: name!, ...(amount !== undefined ? { amount } : {}) }),
    }),
    leaf({
      name: 'withdrawals',
      description: 'the withdrawal queue, oldest first, and the pool capital it is paid from',
      options: [
        { flags: '--pending', description: 'only withdrawals not paid or cancelled yet' },
        { flags: '--provider <name>', description: "only this provider's (its name or id)" },
      ],
      load: () => lazy<typeof import('./withdrawals.js')>(__dirname, 'withdrawals'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'cancel',
      args: [{ name: '<id>', description: 'the withdrawal id (lps withdrawals)' }],
      description: 'cancel a pending withdrawal; what was paid of it stays paid',
      load: () => lazy<typeof import('./cancel.js')>(__dirname, 'cancel'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
  ],
};
