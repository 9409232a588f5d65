/** `svcctl receipts …`: signed settlement receipts. */
import { lazy, leaf, type GroupSpec } from '../../register';

export const receipts: GroupSpec = {
  name: 'receipts',
  description: 'signed settlement receipts: one per batch, chained',
  commands: [
    leaf({
      name: 'verify',
      description: "walk the receipt chain from the indexer's public reads; exit 1 naming the first bad batch",
      options: [
        { flags: '--indexer <url>', description: "the indexer's URL (default: from control's status)" },
        { flags: '--jwks <file>', description: 'verify against this JWKS instead of the published /api/receipts/keys' },
        {
          flags: '--since-checkpoint <file>',
          description:
            'check that the served history leads from batch 1 through this saved checkpoint unchanged (/api/receipts/checkpoint as served)',
        },
        {
          flags: '--call <id>',
          description: "verify one call's refund instead: its proof in its batch's tree and the batch's signed receipt",
        },
      ],
      load: () => lazy<typeof import('./verify.js')>(__dirname, 'verify'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'reissue',
      args: [{ name: '<batch>' }],
      description: 'sign a settled batch that has no receipt again (audited, announced in the changelog); lifts the settler halt',
      load: () => lazy<typeof import('./reissue.js')>(__dirname, 'reissue'),
      shape: ([batch], o) => ({ ...o, batch: batch! }),
    }),
    leaf({
      name: 'rotate-key',
      description: 'sign receipts with a new key from the next batch on; old public keys stay published',
      load: () => lazy<typeof import('./rotate-key.js')>(__dirname, 'rotate-key'),
      shape: (_a, o) => o,
    }),
  ],
};
