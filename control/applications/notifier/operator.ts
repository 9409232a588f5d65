/**
 * The default notifier: the key goes back to the approving operator, once, in the answer to
 * `approve`, with the contact handle to send it to. Nothing leaves control.
 */
import type { AttemptRecord, DeliveryMessage, DeliveryOutcome, Notifier } from './types';

export class OperatorNotifier implements Notifier {
  readonly kind = 'operator' as const;

  constructor(private readonly now: () => number) {}

  async deliver(_message: DeliveryMessage, record: (attempt: AttemptRecord) => Promise<void>): Promise<DeliveryOutcome> {
    await record({ attempt: 1, at: this.now(), outcome: 'shown_to_operator', http_status: null, error: null, target: null });
    return { status: 'shown_to_operator', attempts: 1, error: null };
  }
}
