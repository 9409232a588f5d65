/**
 * Access applications (docs/design.md §8): the fields an applicant gives, the rule that
 * decides which questions are asked, and the admin API's application views. Shared by
 * control (public form, JSON API, admin routes) and `svcctl applications add`, so the
 * direct-contact fallback is validated exactly like the form.
 */
import { z } from 'zod';
import { ExpiresInSeconds, KeyStatus } from './admin';
import { EndpointId } from './endpoint';
import { plainString } from './text';
import { WalletAddress } from './wallet';
import { IsoTime, StateVersion } from './wire';

/** The answer promised to every applicant (docs/design.md §8). */
export const ANSWER_WITHIN_HOURS = 24;

export const APPLICANT_TYPES = ['ai_agent', 'api_merchant', 'ai_agent_merchant'] as const;
export const ApplicantType = z.enum(APPLICANT_TYPES, {
  message: `must be one of ${APPLICANT_TYPES.join(', ')}`,
});
export type ApplicantType = z.infer<typeof ApplicantType>;

export const APPLICANT_TYPE_LABELS: Readonly<Record<ApplicantType, string>> = {
  ai_agent: 'AI agent',
  api_merchant: 'API merchant',
  ai_agent_merchant: 'AI agent merchant',
};

/** Where an application came from: the HTML form, the JSON API, or an operator (`add`). */
export const ApplicationSource = z.enum(['form', 'api', 'direct']);
export type ApplicationSource = z.infer<typeof ApplicationSource>;
export const APPLICATION_STATUSES = ['pending', 'approved', 'rejected'] as const;
export const ApplicationStatus = z.enum(APPLICATION_STATUSES);
export type ApplicationStatus = z.infer<typeof ApplicationStatus>;

/** Field limits, in characters. */
export const FIELD_LIMITS = Object.freeze({
  building: 2000,
  contact_name: 120,
  social_url: 300,
  messaging_handle: 200,
  api_name: 100,
  apis_paid: 20,
  why: 2000,
});

/**
 * Which APIs the agent pays for is asked only of AI agents (docs/design.md §8).
 */
export function apisAsked(type: unknown): boolean {
  return type === 'ai_agent';
}

/**
 * "Why do you want to try svc?" is asked of merchants (API merchants and AI agent merchants),
 * whose interest the other answers do not explain, and of AI agents that pay for no API yet,
 * who have no usage to point at. An AI agent that already pays for APIs is not asked.
 */
export function whyAsked(type: unknown, apisPaid: readonly unknown[] | undefined): boolean {
  if (type === 'api_merchant' || type === 'ai_agent_merchant') return true;
  if (type === 'ai_agent') return !(apisPaid ?? []).some((a) => typeof a === 'string' && a.trim() !== '');
  return false;
}

/** Answer text: one line, or (`multiline`) typed into a text area, so tab and line breaks may stay. */
const text = (max: number, multiline: boolean) =>
  plainString(multiline ? 'multiline' : 'line', { message: 'is required' })
    .trim()
    .min(1, { message: 'is required' })
    .max(max, { message: `must be at most ${max} characters` });

/** A link to a project or personal social-media profile; `github.com/x` gets `https://`. */
export const SocialUrl = plainString('line', { message: 'is required' })
  .trim()
  .min(1, { message: 'is required' })
  .max(FIELD_LIMITS.social_url, { message: `must be at most ${FIELD_LIMITS.social_url} characters` })
  .transform((v) => (/^[a-z0-9-]+(\.[a-z0-9-]+)+(\/|$)/i.test(v) ? `https://${v}` : v))
  .refine(
    (v) => {
      try {
        const url = new URL(v);
        return (
          (url.protocol === 'https:' || url.protocol === 'http:') &&
          url.hostname.includes('.') &&
          url.username === '' &&
          url.password === ''
        );
      } catch {
        return false;
      }
    },
    { message: 'must be a link such as https://x.com/yourproject or https://github.com/you' },
  );

/** An optional wallet: empty or null means "none, can be added later". */
const OptionalWallet = z.preprocess(
  (v) => (v === null || (typeof v === 'string' && v.trim() === '') ? undefined : v),
  WalletAddress.optional(),
);

const ApplicationShape = z.strictObject({
  building: text(FIELD_LIMITS.building, true),
  contact_name: text(FIELD_LIMITS.contact_name, false),
  wallet: OptionalWallet,
  social_url: SocialUrl,
  messaging_handle: text(FIELD_LIMITS.messaging_handle, false),
  applicant_type: ApplicantType,
  apis_paid: z
    .array(text(FIELD_LIMITS.api_name, false), { message: 'must be a list of API names' })
    .max(FIELD_LIMITS.apis_paid, { message: `must list at most ${FIELD_LIMITS.apis_paid} APIs` })
    .optional(),
  why: text(FIELD_LIMITS.why, true).optional(),
  feedback_opt_in: z.boolean({ message: 'must be true or false' }).optional(),
});

/**
 * One application as submitted (JSON body of `POST /api/v1/applications`, the form, and
 * `svcctl applications add`). Answers to questions that are not asked for the chosen type
 * are dropped before validation (`apis_paid` for non-agents, `why` per {@link whyAsked});
 * `why` is required when it is asked. The result is normalised: trimmed text, API names
 * de-duplicated, `feedback_opt_in` defaulting to false.
 */
export const ApplicationInput = z
  .preprocess((raw) => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
    const input = { ...(raw as Record<string, unknown>) };
    if (Array.isArray(input.apis_paid)) {
      input.apis_paid = input.apis_paid.filter((a) => !(typeof a === 'string' && a.trim() === ''));
    }
    if (!apisAsked(input.applicant_type)) delete input.apis_paid;
    const apis = Array.isArray(input.apis_paid) ? input.apis_paid : undefined;
    if (!whyAsked(input.applicant_type, apis)) delete input.why;
    else if (input.why === null || (typeof input.why === 'string' && input.why.trim() === '')) delete input.why;
    return input;
  }, ApplicationShape)
  .superRefine(
    (value, ctx) => {
      // Runs even when other fields failed, so every missing answer is reported at once.
      if (!whyAsked(value.applicant_type, Array.isArray(value.apis_paid) ? value.apis_paid : undefined) || value.why !== undefined) return;
      ctx.addIssue({
        code: 'custom',
        path: ['why'],
        message:
          value.applicant_type === 'ai_agent' ? 'is required for AI agents that do not pay for any API yet' : 'is required for merchants',
      });
    },
    { when: (payload) => payload.value !== null && typeof payload.value === 'object' && !Array.isArray(payload.value) },
  )
  .transform((value): Application => {
    const seen = new Set<string>();
    const apis = (value.apis_paid ?? []).filter((a) => {
      const k = a.toLowerCase();
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
    return {
      building: value.building,
      contact_name: value.contact_name,
      wallet: value.wallet ?? null,
      social_url: value.social_url,
      messaging_handle: value.messaging_handle,
      applicant_type: value.applicant_type,
      apis_paid: apis,
      why: value.why ?? null,
      feedback_opt_in: value.feedback_opt_in ?? false,
    };
  });

/** One application's answers as stored and shown: what {@link ApplicationInput} produces. */
export const ApplicationAnswers = z.strictObject({
  building: z.string(),
  contact_name: z.string(),
  wallet: z.string().nullable(),
  social_url: z.string(),
  messaging_handle: z.string(),
  applicant_type: ApplicantType,
  apis_paid: z.array(z.string()),
  why: z.string().nullable(),
  feedback_opt_in: z.boolean(),
});
export type Application = z.infer<typeof ApplicationAnswers>;

/** `201 {"id","status":"received","answer_within_hours":24}` (200 for a recognised duplicate). */
export const ApplicationReceipt = z.strictObject({
  id: z.string(),
  status: z.literal('received'),
  answer_within_hours: z.number().int().min(1),
});
export type ApplicationReceipt = z.infer<typeof ApplicationReceipt>;

// ---------------------------------------------------------------------------------------
// Admin API

/** `POST /_admin/v1/applications`: the direct-contact fallback (source `direct`). */
export const AddApplicationRequest = z.strictObject({
  application: z.unknown(),
  /** When the applicant got in touch, if earlier than now (ISO 8601). */
  received_at: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 time, e.g. 2030-01-01T12:00:00Z' }).optional(),
});

export const ApproveApplicationRequest = z.strictObject({
  endpoints: z.array(EndpointId).max(1000).optional(),
  expires_in_seconds: ExpiresInSeconds.optional(),
});
export type ApproveApplicationRequest = z.infer<typeof ApproveApplicationRequest>;

export const RejectApplicationRequest = z.strictObject({
  reason: plainString('text').trim().min(1).max(2000).optional(),
});

export const RedeliverApplicationRequest = z.strictObject({
  /** Show the new key to the operator instead of using the configured notifier. */
  to_operator: z.boolean().optional(),
});

export const NotifierKind = z.enum(['operator', 'webhook']);
export type NotifierKind = z.infer<typeof NotifierKind>;
export const DeliveryStatus = z.enum(['shown_to_operator', 'delivered', 'failed']);
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

/** The event type of an approval delivered by webhook. */
export const APPROVAL_EVENT = 'svc.application.approved';

/**
 * The body `applications.notifier=webhook` POSTs to `applications.webhookUrl` (and what the
 * operator is shown to send on), signed with `X-Svc-Signature`. The only place the key is,
 * besides the operator's answer.
 */
export const DeliveryMessage = z.strictObject({
  type: z.literal(APPROVAL_EVENT),
  /** Same on every retry of one delivery, so a receiver can drop repeats. */
  delivery_id: z.string(),
  application_id: z.string(),
  contact_name: z.string(),
  messaging_handle: z.string(),
  key: z.string().describe('the plaintext key'),
  key_id: z.string(),
  /** Endpoint ids the key may call. */
  endpoints: z.array(z.string()),
  /** The gateway base URL, when configured (`applications.marketUrl`). */
  market_url: z.string().nullable(),
  /** How to use the key; it does not repeat the key. */
  instructions: z.string(),
  sent_at: IsoTime,
});
export type DeliveryMessage = z.infer<typeof DeliveryMessage>;

/** Headers of a webhook delivery: Unix seconds, the delivery id, and `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>`. */
export const WEBHOOK_TIMESTAMP_HEADER = 'x-svc-timestamp';
export const WEBHOOK_DELIVERY_HEADER = 'x-svc-delivery';
export const WEBHOOK_SIGNATURE_HEADER = 'x-svc-signature';

/** One row of the delivery log. The key itself is never in it. */
export const DeliveryAttemptView = z.strictObject({
  at: IsoTime,
  notifier: NotifierKind,
  key_id: z.string(),
  attempt: z.number().int().min(1),
  outcome: z.enum(['shown_to_operator', 'delivered', 'retrying', 'failed']),
  http_status: z.number().int().nullable(),
  error: z.string().nullable(),
  target: z.string().nullable(),
});
export type DeliveryAttemptView = z.infer<typeof DeliveryAttemptView>;

export const PriorityView = z.strictObject({
  score: z.number().int(),
  reasons: z.array(z.string()),
});
export type PriorityView = z.infer<typeof PriorityView>;

export const ApplicationView = ApplicationAnswers.extend({
  id: z.string(),
  source: ApplicationSource,
  status: ApplicationStatus,
  received_at: IsoTime,
  /** `received_at` + the 24 h answer target. */
  due_at: IsoTime,
  age_hours: z.number().min(0),
  /** Pending past `due_at`. */
  overdue: z.boolean(),
  /** Decided after `due_at` (null while pending). */
  answered_late: z.boolean().nullable(),
  priority: PriorityView,
  submissions: z.number().int().min(1),
  recorded_by: z.string().nullable(),
  decided_at: IsoTime.nullable(),
  decided_by: z.string().nullable(),
  reject_reason: z.string().nullable(),
  key_id: z.string().nullable(),
  delivery: z.strictObject({ status: DeliveryStatus, notifier: NotifierKind, at: IsoTime, error: z.string().nullable() }).nullable(),
});
export type ApplicationView = z.infer<typeof ApplicationView>;

export const ApplicationDetail = ApplicationView.extend({
  key: z.strictObject({ id: z.string(), prefix: z.string(), status: KeyStatus, endpoints: z.array(z.string()) }).nullable(),
  deliveries: z.array(DeliveryAttemptView),
});
export type ApplicationDetail = z.infer<typeof ApplicationDetail>;

/** A boolean query parameter: `true`, `1` or empty is true; `false` or `0` is false. */
const QueryFlag = z.enum(['true', 'false', '1', '0', '']);

/** Query of `GET /_admin/v1/applications`. */
export const ApplicationListQuery = z.object({
  status: ApplicationStatus.optional().describe('only applications in this state'),
  overdue: QueryFlag.optional().describe('only pending applications past the 24 h answer target'),
  testers: QueryFlag.optional().describe('only applicants who opted in to early-tester offers'),
});

/** `GET /_admin/v1/applications`: review order (pending by priority, then oldest). */
export const ApplicationList = z.strictObject({
  applications: z.array(ApplicationView),
  answer_within_hours: z.number().int().min(1),
});
export type ApplicationList = z.infer<typeof ApplicationList>;

/** Answer to `POST /_admin/v1/applications`: 201, or 200 with `duplicate` for answers already received. */
export const ApplicationAdded = z.strictObject({ duplicate: z.boolean(), application: ApplicationView });
export type ApplicationAdded = z.infer<typeof ApplicationAdded>;

/** Answer to reject. */
export const ApplicationRejected = z.strictObject({ application: ApplicationView, version: StateVersion });
export type ApplicationRejected = z.infer<typeof ApplicationRejected>;

/** The outcome of delivering a key, in the approve and redeliver answers. */
export const DeliveryReport = z.strictObject({
  notifier: NotifierKind,
  status: DeliveryStatus,
  attempts: z.number().int().min(0),
  error: z.string().nullable(),
  deliver_to: z.strictObject({ contact_name: z.string(), messaging_handle: z.string() }),
  /** What to do next when delivery failed. */
  next_step: z.string().nullable(),
});
export type DeliveryReport = z.infer<typeof DeliveryReport>;

/**
 * Answer to approve and redeliver. `key` (the plaintext, once) is present only when the
 * operator notifier delivers it, i.e. the operator is the one who sends it on; `message` is
 * the text to send to the applicant.
 */
export const ApprovalResult = z.strictObject({
  application: ApplicationView,
  key_id: z.string(),
  key_prefix: z.string(),
  endpoints: z.array(z.string()),
  version: StateVersion,
  delivery: DeliveryReport,
  key: z.string().optional(),
  message: z.string().optional(),
});
export type ApprovalResult = z.infer<typeof ApprovalResult>;
