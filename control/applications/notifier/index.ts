/** The configured notifier (`applications.notifier`): operator (default) or webhook. */
import type { Config } from '../../../config/load';
import type { NotifierKind } from '../../../protocol/applications';
import { OperatorNotifier } from './operator';
import type { Notifier } from './types';
import { WebhookNotifier } from './webhook';

export type { AttemptRecord, DeliveryMessage, DeliveryOutcome, Notifier } from './types';

export function createNotifier(config: Readonly<Config>, now: () => number, kind: NotifierKind = config.applications.notifier): Notifier {
  const a = config.applications;
  if (kind === 'operator') return new OperatorNotifier(now);
  // The schema makes both required when notifier is webhook.
  return new WebhookNotifier({
    url: a.webhookUrl!,
    secret: a.webhookSecret!,
    retries: a.webhookRetries,
    backoffMs: a.webhookBackoffMs,
    timeoutMs: a.webhookTimeoutMs,
    now,
  });
}
