/** `svcctl applications …`: review access applications. */
import { lazy, leaf, type GroupSpec } from '../../register';

const ID = [{ name: '<id>' }];

export const applications: GroupSpec = {
  name: 'applications',
  description: 'review access applications (answered within 24 hours)',
  commands: [
    leaf({
      name: 'list',
      description: 'list applications in review order: pending by priority score, then oldest',
      options: [
        { flags: '--pending', description: 'only applications waiting for an answer' },
        { flags: '--overdue', description: 'only pending applications past the 24-hour answer target' },
        { flags: '--testers', description: 'only applicants who opted in to give feedback' },
      ],
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'show',
      args: ID,
      description: 'show an application, its key and its delivery log',
      load: () => lazy<typeof import('./show.js')>(__dirname, 'show'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'approve',
      args: ID,
      description: 'issue a key bound to the application and deliver it (operator notifier: printed once)',
      options: [
        { flags: '--endpoint <id>', description: 'limit the key to an endpoint (repeatable; default: all)', repeatable: true },
        { flags: '--expires <duration>', description: 'expire the key after e.g. 30d' },
      ],
      load: () => lazy<typeof import('./approve.js')>(__dirname, 'approve'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'reject',
      args: ID,
      description: 'reject an application; no key is issued',
      options: [{ flags: '--reason <text>', description: 'why (kept with the application)' }],
      load: () => lazy<typeof import('./reject.js')>(__dirname, 'reject'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'redeliver',
      args: ID,
      description: 'give the approved application’s key a new secret and deliver it again',
      options: [{ flags: '--to-operator', description: 'print the new key to you instead of using the configured notifier' }],
      load: () => lazy<typeof import('./redeliver.js')>(__dirname, 'redeliver'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'add',
      description: 'record an application received over the direct-contact fallback',
      options: [
        { flags: '--building <text>', description: 'what the applicant is building' },
        { flags: '--contact-name <name>', description: 'contact name' },
        { flags: '--wallet <address>', description: 'optional Solana or EVM wallet' },
        { flags: '--social-url <url>', description: 'project or personal social link' },
        { flags: '--messaging-handle <handle>', description: 'where the key is sent' },
        { flags: '--type <type>', description: 'ai_agent, api_merchant or ai_agent_merchant' },
        { flags: '--api <name>', description: 'an API the agent pays for (repeatable; AI agents only)', repeatable: true },
        { flags: '--why <text>', description: 'why they want to try svc (merchants, and agents paying for no API)' },
        { flags: '--feedback', description: 'the applicant will give feedback (early tester)' },
        { flags: '--received-at <time>', description: 'when they got in touch (ISO 8601; default now)' },
      ],
      load: () => lazy<typeof import('./add.js')>(__dirname, 'add'),
      shape: (_a, o) => o,
    }),
  ],
};
