/**
 * Webhook notifier: POSTs the delivery message as JSON to `applications.webhookUrl`.
 *
 * Signature (verify it before trusting a delivery):
 *
 * ```
 * X-Svc-Timestamp: <unix seconds>
 * X-Svc-Signature: sha256=<hex HMAC-SHA256(webhookSecret, "<timestamp>.<raw body>")>
 * X-Svc-Delivery:  <delivery id, the same on every retry>
 * ```
 *
 * The timestamp is inside the signed bytes, so a receiver that refuses old timestamps (e.g.
 * older than 5 minutes) also refuses replays. Each attempt is signed afresh.
 *
 * Retries: a connection failure, a timeout (`applications.webhookTimeoutMs`), 408, 429 or
 * 5xx is retried up to `applications.webhookRetries` times with exponential backoff
 * (`webhookBackoffMs` doubling per attempt, capped at {@link MAX_BACKOFF_MS}, with jitter).
 * Any other answer is final: 2xx delivered, the rest failed (redirects are not followed).
 * Retrying this POST is safe because receivers can drop repeats by `X-Svc-Delivery`.
 */
import { createHmac } from 'node:crypto';
import { WEBHOOK_DELIVERY_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../../../protocol/applications';
import { redactKeys } from '../../../protocol/keys';
import type { AttemptRecord, DeliveryMessage, DeliveryOutcome, Notifier } from './types';

/** Longest wait between two attempts. @default 10000 */
export const MAX_BACKOFF_MS = 10_000;
export const SIGNATURE_HEADER = WEBHOOK_SIGNATURE_HEADER;
export const TIMESTAMP_HEADER = WEBHOOK_TIMESTAMP_HEADER;
export const DELIVERY_HEADER = WEBHOOK_DELIVERY_HEADER;
export const WEBHOOK_USER_AGENT = 'svc-control/0.1.0';

/** `sha256=<hex>` over `<timestamp>.<body>`. */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  return 'sha256=' + createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

export interface WebhookOptions {
  url: string;
  secret: string;
  retries: number;
  backoffMs: number;
  timeoutMs: number;
  now: () => number;
  sleep?: (ms: number) => Promise<void>;
  fetch?: typeof fetch;
  random?: () => number;
}

/** The URL as logged: scheme, host and path; never credentials or the query string. */
export function loggableTarget(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
}

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

function networkError(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const code = e.cause?.code ?? (e as NodeJS.ErrnoException).code;
  return `connection failed${code ? ` (${code})` : ''}`;
}

export class WebhookNotifier implements Notifier {
  readonly kind = 'webhook' as const;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly fetchImpl: typeof fetch;
  private readonly random: () => number;
  private readonly target: string;

  constructor(private readonly options: WebhookOptions) {
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.fetchImpl = options.fetch ?? fetch;
    this.random = options.random ?? Math.random;
    this.target = loggableTarget(options.url);
  }

  /** Wait before attempt `attempt + 1`: base·2^(attempt−1), capped, the upper half jittered. */
  backoff(attempt: number): number {
    const full = Math.min(MAX_BACKOFF_MS, this.options.backoffMs * 2 ** (attempt - 1));
    return Math.round(full / 2 + (full / 2) * this.random());
  }

  async deliver(message: DeliveryMessage, record: (attempt: AttemptRecord) => Promise<void>): Promise<DeliveryOutcome> {
    const { url, secret, retries, timeoutMs, now } = this.options;
    const body = JSON.stringify(message);
    const total = retries + 1;
    for (let attempt = 1; ; attempt++) {
      const timestamp = Math.floor(now() / 1000);
      let status: number | null = null;
      let error: string;
      let retryable: boolean;
      try {
        const res = await this.fetchImpl(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': WEBHOOK_USER_AGENT,
            [TIMESTAMP_HEADER]: String(timestamp),
            [SIGNATURE_HEADER]: signWebhook(secret, timestamp, body),
            [DELIVERY_HEADER]: message.delivery_id,
          },
          body,
          redirect: 'manual',
          signal: AbortSignal.timeout(timeoutMs),
        });
        status = res.status;
        await res.body?.cancel().catch(() => undefined);
        if (status >= 200 && status < 300) {
          await record({ attempt, at: now(), outcome: 'delivered', http_status: status, error: null, target: this.target });
          return { status: 'delivered', attempts: attempt, error: null };
        }
        retryable = isRetryableStatus(status);
        error = `receiver answered ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`;
      } catch (err) {
        retryable = true;
        error = networkError(err, timeoutMs);
      }
      error = redactKeys(error);
      const last = attempt >= total || !retryable;
      await record({ attempt, at: now(), outcome: last ? 'failed' : 'retrying', http_status: status, error, target: this.target });
      if (last) {
        const why = retryable ? `gave up after ${attempt} attempt${attempt === 1 ? '' : 's'}` : 'not retried';
        return { status: 'failed', attempts: attempt, error: `${error}; ${why}` };
      }
      await this.sleep(this.backoff(attempt));
    }
  }
}
