/** `svcctl payouts …`: refunds owed to wallets. */
import { lazy, leaf, type GroupSpec } from '../../register';

export const payouts: GroupSpec = {
  name: 'payouts',
  description: 'refunds owed to wallets',
  commands: [
    leaf({
      name: 'list',
      description: 'what is owed per wallet (and to accounts without a wallet)',
      options: [{ flags: '--wallet <address>', description: 'one wallet' }],
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'mark-paid',
      description: 'record a payment made to a wallet outside svc (never more than owed)',
      options: [
        { flags: '--wallet <address>', description: 'the wallet paid', required: true },
        { flags: '--amount <amount>', description: 'micro-units, or units with a decimal point', required: true },
        { flags: '--reference <ref>', description: 'the payment reference (unique)', required: true },
      ],
      load: () => lazy<typeof import('./mark-paid.js')>(__dirname, 'mark-paid'),
      shape: (_a, o) => o as { wallet: string; amount: string; reference: string },
    }),
  ],
};
