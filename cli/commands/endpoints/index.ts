/** `svcctl endpoints …`: wrapped upstream endpoints. */
import { lazy, leaf, type GroupSpec, type OptionSpec } from '../../register';

/** The fields `add` and `update` set (`fields.ts` turns them into the admin API's body). */
const FIELD_OPTIONS: readonly OptionSpec[] = [
  { flags: '--upstream <url>', description: 'upstream base URL (http:// or https://)' },
  { flags: '--display-name <name>', description: 'name shown on the public pages (never the upstream URL or id)' },
  { flags: '--no-display-name', description: 'remove the display name (update)' },
  { flags: '--methods <list>', description: 'methods besides POST, e.g. GET,PUT' },
  { flags: '--price <micro>', description: 'principal per call, micro-units' },
  { flags: '--premium <micro>', description: 'premium per call, micro-units' },
  { flags: '--sla-ms <ms>', description: 'latency SLA; slower 2xx answers are latency breaches' },
  { flags: '--timeout-ms <ms>', description: 'upstream timeout' },
  { flags: '--refund-cap-per-hour <micro>', description: 'most refunded per hour (0 = no cap)' },
  {
    flags: '--refund-cap-per-call <amount>',
    description: 'most refunded for one call: micro-units, or units with a decimal point (0 = no cap)',
  },
  {
    flags: '--refund-cap-per-batch <amount>',
    description: 'most refunded in one settlement batch: micro-units, or units with a decimal point (0 = no cap)',
  },
  { flags: '--treasury-fee-bps <bps>', description: 'share of premiums to the treasury' },
  {
    flags: '--billing <mode>',
    description:
      "prepaid (a keyed call is admitted only while its account covers the premium) or postpaid (the premium is taken at settlement); add's default: postpaid",
  },
  { flags: '--header <header>', description: "inject 'Name: value' upstream (repeatable; write-only)", repeatable: true },
  { flags: '--response-schema <file>', description: 'JSON schema file 2xx JSON answers must match (else schema_mismatch)' },
  { flags: '--no-response-schema', description: 'remove the response schema (update)' },
];

const ID = [{ name: '<id>' }];

export const endpoints: GroupSpec = {
  name: 'endpoints',
  description: 'wrapped upstream endpoints',
  commands: [
    leaf({
      name: 'add',
      args: ID,
      description: 'register an endpoint',
      options: FIELD_OPTIONS,
      load: () => lazy<typeof import('./add.js')>(__dirname, 'add'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'update',
      args: ID,
      description: 'change an endpoint',
      options: FIELD_OPTIONS,
      load: () => lazy<typeof import('./update.js')>(__dirname, 'update'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'list',
      description: 'list endpoints',
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'show',
      args: ID,
      description: 'show an endpoint',
      load: () => lazy<typeof import('./show.js')>(__dirname, 'show'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'remove',
      args: ID,
      description: 'remove an endpoint',
      load: () => lazy<typeof import('./remove.js')>(__dirname, 'remove'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
  ],
};
