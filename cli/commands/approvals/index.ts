/** `svcctl approvals …`: two-person actions waiting for a second operator (`money.approvals: 2`). */
import { APPROVAL_STATUSES } from '../../../protocol/approvals';
import { lazy, leaf, type GroupSpec } from '../../register';

export const approvals: GroupSpec = {
  name: 'approvals',
  description: 'two-person actions waiting for a second operator (with money.approvals: 2): list, approve, reject',
  commands: [
    leaf({
      name: 'list',
      description: 'requests, newest first: pending, approved, rejected, expired',
      options: [{ flags: '--status <status>', description: `only one state: ${APPROVAL_STATUSES.join(', ')}` }],
      load: () => lazy<typeof import('./list.js')>(__dirname, 'list'),
      shape: (_a, o) => o,
    }),
    leaf({
      name: 'approve',
      args: [{ name: '<id>' }],
      description: "approve another operator's request (needs the action's scope): it happens now",
      load: () => lazy<typeof import('./approve.js')>(__dirname, 'approve'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
    leaf({
      name: 'reject',
      args: [{ name: '<id>' }],
      description: 'reject a request (its requester may withdraw their own)',
      options: [{ flags: '--reason <text>', description: 'why, kept with the request and in the audit log' }],
      load: () => lazy<typeof import('./reject.js')>(__dirname, 'reject'),
      shape: ([id], o) => ({ ...o, id: id! }),
    }),
  ],
};
