/** The calls control makes itself, to operators' URLs. Part of control's document (`admin.ts`). */
import { z } from 'zod';
import { DeliveryMessage, WEBHOOK_DELIVERY_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../applications';
import type { Operation } from './operation';

/** What control POSTs to `applications.webhookUrl` when an application is approved. */
export const WEBHOOKS: Record<string, Operation> = {
  applicationApproved: {
    method: 'post',
    path: '{applications.webhookUrl}',
    operationId: 'applicationApproved',
    summary: 'An approved application’s key, for the applicant',
    description:
      'Verify `X-Svc-Signature` over the raw body with a constant-time compare and refuse old timestamps. Connection failures, timeouts, 408, 429 and 5xx are retried `applications.webhookRetries` times with doubling backoff; other answers are final.',
    tag: 'applications',
    security: ['none'],
    params: [
      {
        name: WEBHOOK_TIMESTAMP_HEADER,
        in: 'header',
        required: true,
        schema: z.string().regex(/^[0-9]+$/),
        description: 'Unix seconds when this attempt was signed',
      },
      {
        name: WEBHOOK_DELIVERY_HEADER,
        in: 'header',
        required: true,
        schema: z.string(),
        description: 'The delivery id, the same on every retry',
      },
      {
        name: WEBHOOK_SIGNATURE_HEADER,
        in: 'header',
        required: true,
        schema: z.string().regex(/^sha256=[0-9a-f]{64}$/),
        description: '`sha256=<hex HMAC-SHA256(applications.webhookSecret, "<timestamp>.<raw body>")>`',
      },
    ],
    body: { schema: DeliveryMessage },
    answers: [{ status: 200, description: 'Any 2xx: delivered' }],
    errors: [],
  },
};
