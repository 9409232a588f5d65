/**
 * `svcctl applications add --building T --contact-name N --social-url U --messaging-handle H
 * --type ai_agent|api_merchant|ai_agent_merchant [--wallet A] [--api NAME]... [--why T]
 * [--feedback] [--received-at ISO]`: record an application received over the direct-contact
 * fallback (source `direct`), validated exactly like the form.
 */
import { ApplicationInput, type ApplicationAdded } from '../../../protocol/applications';
import type { Deps } from '../../deps';
import { EXIT_OK, UsageError } from '../../exit-codes';

export interface AddOptions {
  building?: string;
  contactName?: string;
  wallet?: string;
  socialUrl?: string;
  messagingHandle?: string;
  type?: string;
  api?: string[];
  why?: string;
  feedback?: boolean;
  receivedAt?: string;
  json?: boolean;
}

/** The flag that sets each answer, for error messages. */
export const FLAG_OF: Readonly<Record<string, string>> = {
  building: '--building',
  contact_name: '--contact-name',
  wallet: '--wallet',
  social_url: '--social-url',
  messaging_handle: '--messaging-handle',
  applicant_type: '--type',
  apis_paid: '--api',
  why: '--why',
  feedback_opt_in: '--feedback',
};

export async function run(opts: AddOptions, deps: Deps): Promise<number> {
  const answers: Record<string, unknown> = {
    ...(opts.building !== undefined ? { building: opts.building } : {}),
    ...(opts.contactName !== undefined ? { contact_name: opts.contactName } : {}),
    ...(opts.wallet !== undefined ? { wallet: opts.wallet } : {}),
    ...(opts.socialUrl !== undefined ? { social_url: opts.socialUrl } : {}),
    ...(opts.messagingHandle !== undefined ? { messaging_handle: opts.messagingHandle } : {}),
    ...(opts.type !== undefined
      ? {
          applicant_type: opts.type
            .trim()
            .toLowerCase()
            .replace(/[-\s]+/g, '_'),
        }
      : {}),
    ...(opts.api !== undefined ? { apis_paid: opts.api } : {}),
    ...(opts.why !== undefined ? { why: opts.why } : {}),
    feedback_opt_in: opts.feedback === true,
  };
  const checked = ApplicationInput.safeParse(answers);
  if (!checked.success) {
    const problems = checked.error.issues.map((i) => {
      const field = String(i.path[0] ?? '');
      return `${FLAG_OF[field] ?? field}: ${i.message}`;
    });
    throw new UsageError(`the application is not valid: ${problems.join('; ')}`);
  }
  if (opts.receivedAt !== undefined && Number.isNaN(Date.parse(opts.receivedAt))) {
    throw new UsageError(`--received-at ${JSON.stringify(opts.receivedAt)} is not a time; use ISO 8601, e.g. 2030-01-01T12:00:00Z`);
  }
  const answer = await deps.client.post<ApplicationAdded>('/_admin/v1/applications', {
    application: answers,
    ...(opts.receivedAt !== undefined ? { received_at: new Date(Date.parse(opts.receivedAt)).toISOString() } : {}),
  });
  if (opts.json) deps.out.json(answer);
  else {
    const a = answer.application;
    deps.out.line(
      answer.duplicate
        ? `Already recorded as ${a.id} (the same answers arrived within the duplicate window); nothing added.`
        : `Recorded ${a.id} (source direct), priority ${a.priority.score}; answer due ${a.due_at}.`,
    );
  }
  return EXIT_OK;
}
