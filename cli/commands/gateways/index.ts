/** `svcctl gateways …`: the gateways control knows. */
import { lazy, leaf, type GroupSpec } from '../../register';

export const gateways: GroupSpec = {
  name: 'gateways',
  description: 'gateways control knows: limit shares, weights, applied versions',
  commands: [
    leaf({
      name: 'list',
      description: 'every gateway: connected, live, weight, share of key limits, applied version, engine, last seen',
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'weight',
      args: [
        { name: '<id>', description: 'the gateway id' },
        { name: '<weight>', description: 'a number above 0 (default weight 1); shares follow the weights of the live gateways' },
      ],
      description: 'weight a gateway in the split of key limits (for load balancers that send it more or less traffic)',
      load: () => lazy<typeof import('./weight.js')>(__dirname, 'weight'),
      shape: ([id, weight], o) => ({ ...o, id: id!, weight: weight! }),
    }),
  ],
};
